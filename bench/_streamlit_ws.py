"""A Streamlit page driven over its own websocket protocol, as a browser drives it (a
helper of the benches, not a bench: its name starts with an underscore).

One connection per person, the same BackMsg / ForwardMsg protobufs the browser sends and
reads, no drawing: so that on two cores a load test measures the server, not browsers.
Shared by bench/raters.py (one server) and bench/serve.py (through the proxy).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

RERUN_TIMEOUT_S = 60.0


@dataclass
class Page:
    """What one script run drew that a person acts on or reads: the radios, buttons and
    checkboxes, the alerts (st.error, st.success ...) and any exception shown."""

    radio: list[Any] = field(default_factory=list)
    button: list[Any] = field(default_factory=list)
    checkbox: list[Any] = field(default_factory=list)
    alert: list[Any] = field(default_factory=list)
    exception: list[Any] = field(default_factory=list)

    def submitter(self) -> Any | None:
        """The form's Submit button, or None when the page shows no form."""
        return next((b for b in self.button if b.is_form_submitter), None)

    def alerts(self, kind: str) -> list[str]:
        """The bodies of the alerts of one kind ("ERROR", "WARNING", "INFO", "SUCCESS")."""
        from streamlit.proto.Alert_pb2 import Alert

        wanted = Alert.Format.Value(kind)
        return [a.body for a in self.alert if a.format == wanted]


class Session:
    """One browser tab's session on ``page_name`` with ``query`` in its address."""

    def __init__(self, ws: Any, page_name: str, query: str) -> None:
        self.ws = ws
        self.page_name = page_name
        self.query = query

    async def run(self, states: Any = None) -> Page:
        """Rerun the script with these widget states; the page once the run has finished."""
        from streamlit.proto.BackMsg_pb2 import BackMsg
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
        from streamlit.proto.WidgetStates_pb2 import WidgetStates

        message = BackMsg()
        message.rerun_script.query_string = self.query
        message.rerun_script.page_name = self.page_name
        message.rerun_script.widget_states.CopyFrom(states or WidgetStates())
        await self.ws.send(message.SerializeToString())
        found = Page()
        while True:
            forward = ForwardMsg()
            forward.ParseFromString(await asyncio.wait_for(self.ws.recv(), RERUN_TIMEOUT_S))
            kind = forward.WhichOneof("type")
            if kind == "delta" and forward.delta.WhichOneof("type") == "new_element":
                element = forward.delta.new_element
                which = element.WhichOneof("type")
                if which in ("radio", "button", "checkbox", "alert", "exception"):
                    getattr(found, which).append(getattr(element, which))
            elif kind == "script_finished":
                if forward.script_finished != ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                    return found
                found = Page()

    async def submit_scores(self, page: Page, score: str) -> Page:
        """Pick ``score`` on every radio of ``page`` and press its form's Submit."""
        from streamlit.proto.WidgetStates_pb2 import WidgetStates

        states = WidgetStates()
        for radio in page.radio:
            state = states.widgets.add()
            state.id = radio.id
            state.string_value = score  # radios send the chosen option's text
        trigger = states.widgets.add()
        trigger.id = page.submitter().id
        trigger.trigger_value = True
        return await self.run(states)


def connect(port: int, cookie: str | None = None) -> Any:
    """A websocket to a Streamlit server (or a proxy in front of it) on loopback; with
    ``cookie``, the ``Cookie`` header the page's own request was given (a sticky proxy
    keeps the connection on the process that served the page)."""
    import websockets

    return websockets.connect(
        f"ws://127.0.0.1:{port}/_stcore/stream",
        subprotocols=["streamlit"],
        max_size=None,
        open_timeout=30,
        additional_headers={"Cookie": cookie} if cookie else None,
    )
