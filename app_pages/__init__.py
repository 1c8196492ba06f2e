"""One thin script per page, in section folders; app.py registers them with st.navigation.
Not named ``pages/``: Streamlit would read that folder as its old multipage mode until the
first run of st.navigation (tests/browser/test_first_visit_browser.py)."""
