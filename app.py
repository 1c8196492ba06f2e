"""KoED Studio: the router and the frame around every page."""

import streamlit as st

PAGES = {
    "Dialogues": [
        st.Page("pages/explorer.py", title="Explorer", icon=":material/forum:", default=True),
        st.Page("pages/overview.py", title="Label overview", icon=":material/grid_on:"),
        st.Page("pages/adaptation.py", title="Adaptation", icon=":material/translate:"),
    ],
    "Models": [
        st.Page("pages/chat.py", title="Chat", icon=":material/chat:"),
        st.Page("pages/runs.py", title="Runs", icon=":material/playlist_play:"),
    ],
}


def main() -> None:
    """Configure the page, register every page, run the chosen one."""
    st.set_page_config(page_title="KoED Studio", page_icon=":material/favorite:", layout="wide")
    page = st.navigation(PAGES)
    st.sidebar.caption("KoED Studio · the Korean Empathetic Dialogues benchmark, ko/en")
    page.run()


main()
