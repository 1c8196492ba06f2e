"""The results section's page scripts (run by st.navigation, never imported)."""
