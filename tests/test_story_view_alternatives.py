"""The story view takes the events of other versions of a turn without breaking (the full UI of
versions, `‹ 2/3 ›` and browsing keys, is built on top): another version streams into the turn's
own message, a choice shows the chosen version's prose and world."""

from __future__ import annotations

from storyloom.tui.testing.narrators import GatedReply, turn_text
from storyloom.tui.widgets.turn_message import TurnMessage
from tests.test_tui_app import PROSE, TAKE_LAMP, finished, make_app, send

OTHER = "You leave the brass lamp where it lies, for now."


async def test_another_version_and_a_choice_show_in_the_turn_s_own_message_and_the_side_panel():
    app = make_app(GatedReply(turn_text(PROSE, TAKE_LAMP)), GatedReply(turn_text(OTHER, [])))
    async with app.run_test(size=(80, 24)) as pilot:
        await send(pilot, "take lamp")
        await finished(pilot, app)
        session = app.game.play.story
        async for event in session.regenerate():
            await app.game.render_event(event)
        await pilot.pause()
        messages = list(app.game.transcript.query(TurnMessage))
        assert len(messages) == 1 and messages[0].prose.text == OTHER
        assert app.game.side_panel.state["items"]["lamp"] == "shore"
        chosen = session.choose(1)
        assert chosen is not None
        await app.game.render_event(chosen)
        await pilot.pause()
        assert messages[0].prose.text == PROSE
        assert app.game.side_panel.state["items"]["lamp"] == "player"
        assert app.game.transcript.committed_exchanges() == [("take lamp", PROSE)]
