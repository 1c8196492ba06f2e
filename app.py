"""KoED Studio: the router and the frame around every page.

Which pages exist depends on who is logged in: visitors get the public pages and a login,
raters add the rating page, annotators the annotation page, admins the runs, studies
and annotation projects. A page left out of
st.navigation cannot be opened by URL either.
"""

from pathlib import Path

import streamlit as st

from components.account import login_form
from components.core import auth, language, resources
from components.core.literal import md, without_paths
from components.core.not_found import not_found_page
from components.core.state import crowd_session
from components.models import jobs_panel
from components.rating.crowd_admin import bound_study
from components.rating.crowd_visit import no_link, resume_visit
from koed_core.errors import KoedError
from koed_core.i18n import N_, _

HERE = Path(__file__).resolve().parent  # page paths hold wherever the app is started from
language.start()  # before any title below: the menu is in the reader's language too
ICON = HERE / "data" / "icon.png"
EXPLORER = st.Page(  # served at "/"; its own name is neither of the addresses it answers
    HERE / "app_pages/dialogues/explorer.py",  # (Streamlit serves a default page at "/" only)
    title=_("Explorer"),
    icon=":material/forum:",
    url_path="explorer-home",
    default=True,
)
PUBLIC = {
    N_("Dialogues"): [
        EXPLORER,
        st.Page(
            HERE / "app_pages/dialogues/overview.py",
            title=_("Label overview"),
            icon=":material/grid_on:",
        ),
        st.Page(
            HERE / "app_pages/dialogues/adaptation.py",
            title=_("Adaptation"),
            icon=":material/translate:",
        ),
    ],
    N_("Models"): [
        st.Page(HERE / "app_pages/models/chat.py", title=_("Chat"), icon=":material/chat:")
    ],
    N_("Results"): [
        st.Page(
            HERE / "app_pages/results/gap.py", title=_("Empathy gap"), icon=":material/bar_chart:"
        ),
        st.Page(
            HERE / "app_pages/results/demo.py", title=_("Demo (talk)"), icon=":material/co_present:"
        ),
        st.Page(
            HERE / "app_pages/results/episodes.py", title=_("Episodes"), icon=":material/repeat:"
        ),
        st.Page(
            HERE / "app_pages/results/agreement.py",
            title=_("Judge-human agreement"),
            icon=":material/balance:",
        ),
    ],
}
RUNS = st.Page(HERE / "app_pages/models/runs.py", title=_("Runs"), icon=":material/playlist_play:")
JUDGE = st.Page(HERE / "app_pages/models/judge.py", title=_("Judge"), icon=":material/gavel:")
LOGIN = st.Page(HERE / "app_pages/account/login.py", title=_("Log in"), icon=":material/login:")
ACCOUNT = st.Page(
    HERE / "app_pages/account/login.py", title=_("Account"), icon=":material/account_circle:"
)
RATE = st.Page(
    HERE / "app_pages/rating/rate.py", title=_("Rate responses"), icon=":material/star_rate:"
)
STUDIES = st.Page(
    HERE / "app_pages/rating/studies.py", title=_("Studies"), icon=":material/assignment:"
)
JOIN = st.Page(
    HERE / "app_pages/rating/join.py",
    title=_("Rating study"),
    icon=":material/how_to_reg:",
    url_path="join",
)
ANNOTATE = st.Page(
    HERE / "app_pages/annotation/annotate.py", title=_("Annotate"), icon=":material/edit_note:"
)
PROJECTS = st.Page(
    HERE / "app_pages/annotation/projects.py",
    title=_("Annotation projects"),
    icon=":material/fact_check:",
)
DASHBOARD = st.Page(
    HERE / "app_pages/rating/dashboard.py", title=_("Study dashboard"), icon=":material/monitoring:"
)


def pages_for(state: auth.AuthState) -> dict[str, list[st.Page]]:
    """The navigation a visitor, rater or admin gets."""
    pages = {section: list(items) for section, items in PUBLIC.items()}
    if not state.accounts_exist:
        pages["Models"] += [RUNS, JUDGE]  # no accounts yet: one-person use, nothing to guard
        pages["Annotation"] = [PROJECTS, ANNOTATE]
    if state.account is None:
        pages["Account"] = [LOGIN]
    elif state.account.role == "annotator":
        pages["Annotation"] = [ANNOTATE]
        pages["Account"] = [ACCOUNT]
    elif state.account.role == "rater":
        if bound_study(state.account.username) is not None:
            return {"Rating": [RATE], "Account": [ACCOUNT]}  # joined by invite: rating only
        pages["Rating"] = [RATE]
        pages["Account"] = [ACCOUNT]
    else:
        pages["Models"] += [RUNS, JUDGE]
        pages["Rating"] = [STUDIES, DASHBOARD, RATE]
        pages["Annotation"] = [PROJECTS, ANNOTATE]
        pages["Account"] = [ACCOUNT]
    return pages


def _to_join() -> None:
    st.switch_page(JOIN, query_params=st.query_params.to_dict())


def crowd_visit() -> bool:
    """A worker who came by a study's invite link sees that study's page and nothing else
    (no menu, no other page by URL), until their visit ends: a reload or a typed URL in
    the same browser keeps them there (a signed cookie says whose visit it is)."""
    if not (st.query_params.get("invite") or crowd_session() or resume_visit()):
        return False
    home = st.Page(_to_join, title=_("Rating study"), default=True)  # "/" and a reload
    # Any other page's address, typed in the same tab, leads back to the study too
    # (instead of Streamlit's "Page not found" over it).
    elsewhere = [
        st.Page(_to_join, title=_("{page} (study)", page=page.title), url_path=page.url_path)
        for page in (*[p for pages in PUBLIC.values() for p in pages], *GUARDED, LOGIN)
        if page.url_path
    ]
    page = st.navigation([home, JOIN, *elsewhere], position="hidden")
    try:
        page.run()
    except KoedError as err:  # a worker never sees where the server keeps its files
        st.error(md(without_paths(err)), icon=":material/error:")
    return True


GUARDED = (RUNS, JUDGE, STUDIES, DASHBOARD, RATE, ANNOTATE, PROJECTS)
CLOSED_PAGE = {RATE.url_path: "rater", ANNOTATE.url_path: "annotator"}
# The account roles as the sidebar and the Account page name them, with _(role):
ROLES = (N_("admin"), N_("rater"), N_("annotator"))
# The menu's sections that pages_for adds, translated where the menu is drawn:
SECTIONS = (N_("Rating"), N_("Annotation"), N_("Account"))
# Other addresses of the Explorer, the default page at "/": links to /explorer?... from
# before and /dialogues (its section's name) open it, with their filters. (No bare strings
# in this script: Streamlit's magic would draw them on every page.)
OLD_ADDRESSES = ("explorer", "dialogues")


def _closed(page: st.Page) -> st.Page:
    """A hidden page at a guarded page's address, for a session that may not open it: a
    link from an e-mail says whose page it is and offers the login, instead of Streamlit's
    "Page not found" over the Explorer (and the hint stays: it is that address's page)."""
    role = CLOSED_PAGE.get(page.url_path, "admin")

    def closed() -> None:
        login_form.closed_page(page.title, role)

    return st.Page(closed, title=page.title, url_path=page.url_path, visibility="hidden")


def _moved(address: str) -> st.Page:
    def to_explorer() -> None:  # every value of a repeated parameter (labels=a&labels=b)
        query = {name: st.query_params.get_all(name) for name in st.query_params}
        st.switch_page(EXPLORER, query_params=query)

    return st.Page(to_explorer, title=_("Explorer"), url_path=address, visibility="hidden")


def hidden_pages(allowed: dict[str, list[st.Page]]) -> list[st.Page]:
    """The guarded pages this session may not open, the old addresses, and ``/join``
    opened with no invite (it says where it opens from), as pages that are in no menu."""
    open_here = {p.url_path for pages in allowed.values() for p in pages}
    closed = [_closed(page) for page in GUARDED if page.url_path not in open_here]
    door = st.Page(no_link, title=JOIN.title, url_path="join", visibility="hidden")
    return [*closed, *[_moved(address) for address in OLD_ADDRESSES], door]


def main() -> None:
    """Configure the page, check the login, register the allowed pages, run the chosen one."""
    # The tab icon ships with the app: a material icon would be fetched from a font host.
    st.set_page_config(page_title="KoED Studio", page_icon=str(ICON), layout="wide")
    try:
        resources.settings()  # every setting is checked here, before anything uses one
    except KoedError as err:  # nobody is logged in yet: file names, not the server's paths
        st.error(md(without_paths(err)), icon=":material/error:")
        return
    if crowd_visit():
        return
    state = auth.start()
    auth.write_pending_cookie()
    allowed = pages_for(state)
    menu = {_(section): pages for section, pages in allowed.items()}
    last = list(menu)[-1]
    menu[last] = [*menu[last], *hidden_pages(allowed)]  # in no menu: hidden
    # an address no page has: our page says so in the reader's language (not Streamlit's
    # English dialog over the Explorer)
    missing = not_found_page({p.url_path for pages in menu.values() for p in pages}, EXPLORER)
    if missing is not None:
        menu[last] = [*menu[last], missing]
    # Along the top: the sidebar is left to the page's own controls (the Explorer's
    # filters stay in view at 1366x768 for an admin with fifteen pages).
    page = st.navigation(menu, position="top")
    # the tab names the page, in the reader's language, and follows a login ("Log in"
    # becomes "Account"): one fixed title hid which tab is which
    st.set_page_config(page_title=f"{page.title} · KoED Studio")  # the product's name
    language.switch()
    # The sidebar holds a page's own controls, a signed-in person's name and the jobs
    # panel; a visitor's page with none leaves it empty, and Streamlit gives the room
    # back to the page (the tab already names the product).
    if state.account is not None:
        st.sidebar.caption(_("KoED Studio · the Korean Empathetic Dialogues benchmark, ko/en"))
        st.sidebar.caption(
            _(
                "Logged in: {name} ({role})",
                name=md(state.account.name),
                role=md(_(state.account.role)),
            )
        )
        login_form.logout_button()
    try:
        jobs_panel.keep_worker_alive()
        jobs_panel.render_sidebar_panel()
        page.run()
    except KoedError as err:
        # The one boundary of every page: a broken models.toml, database or accounts
        # file is a message naming the file, never a traceback; the server's paths are
        # for admins.
        st.error(md(str(err) if auth.is_admin() else without_paths(err)), icon=":material/error:")


main()
