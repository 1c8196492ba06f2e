"""One thin script per page, in section folders (app.py registers them with st.navigation;
the flat scripts here only hand a first deep link after a server start over to app.py)."""
