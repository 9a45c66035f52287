"""torch's log records during the plugin's calls: no handler raises into torch, the records
reach their handlers afterwards, safe to format, and a finding quotes the warnings; a
failed capture's records go with its error instead."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import NoReturn

import pytest

from pytest_exportcheck import capture as registry
from pytest_exportcheck.containment.failures import CaptureError
from pytest_exportcheck.model.torch_logs import kept_torch_logs, logged_lines


class RaisingHandler(logging.Handler):
    """As pytest's LogCaptureHandler: an error of its own emit is raised, not printed."""

    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(self.format(record))

    def handleError(self, record: logging.LogRecord) -> None:
        raise  # the emit error, re-raised as pytest does


@pytest.fixture
def handler() -> Iterator[RaisingHandler]:
    handler = RaisingHandler()
    loggers = [logging.getLogger("torch._export.serde.fake"), logging.getLogger("elsewhere")]
    for logger in loggers:
        logger.addHandler(handler)
        logger.propagate = False
    yield handler
    for logger in loggers:
        logger.removeHandler(handler)


def malformed() -> None:
    # torch/_export/serde/serialize.py's deserialize_torch_artifact: two %s, one argument.
    logging.getLogger("torch._export.serde.fake").warning(
        "Loaded object of type %s after initial failure: %s", tuple
    )


def test_a_malformed_torch_record_raises_through_a_raising_handler_alone(
    handler: RaisingHandler,
) -> None:
    with pytest.raises(TypeError, match="not enough arguments for format string"):
        malformed()


def test_no_handler_raises_into_the_block_and_the_record_reaches_it_afterwards(
    handler: RaisingHandler,
) -> None:
    with kept_torch_logs() as logged:
        malformed()
        assert handler.messages == []  # kept from every handler while torch runs

    assert len(logged) == 1
    (message,) = handler.messages
    assert message.startswith("Loaded object of type %s after initial failure: %s")
    assert "arguments that do not fit the message: (<class 'tuple'>,)" in message


def test_records_of_other_loggers_go_to_their_handlers_at_once(handler: RaisingHandler) -> None:
    with kept_torch_logs() as logged:
        logging.getLogger("elsewhere").warning("value %d", 3)
        assert handler.messages == ["value 3"]
    assert logged == []


def test_the_handlers_are_back_when_the_block_raises(handler: RaisingHandler) -> None:
    call_handlers = logging.Logger.callHandlers
    with pytest.raises(RuntimeError), kept_torch_logs():
        malformed()
        raise RuntimeError("torch failed")
    assert logging.Logger.callHandlers is call_handlers
    assert len(handler.messages) == 1


def test_a_finding_quotes_warnings_with_their_exception_chain_root_first(
    handler: RaisingHandler,
) -> None:
    logger = logging.getLogger("torch._export.serde.fake")
    with kept_torch_logs() as logged:
        logger.debug("[deserialize] %s", "node")
        try:
            try:
                raise AssertionError("expected metadata_split to return 3 parts, got 5")
            except AssertionError as exc:
                raise ValueError("Failed deserializing node linear") from exc
        except ValueError:
            logger.warning("Ran into the following error when deserializing", exc_info=True)

    assert logged_lines(logged) == [
        "WARNING torch._export.serde.fake: Ran into the following error when deserializing",
        "  AssertionError: expected metadata_split to return 3 parts, got 5",
        "  ValueError: Failed deserializing node linear",
    ]


def guard_error(subject: object) -> NoReturn:
    """As strict export refusing a dim: torch logs the guard's failure, then raises."""
    logging.getLogger("torch._export.serde.fake").error("Error while creating guard:\nName: ''")
    raise CaptureError("Constraints violated (seq)!", "constraint violation")


def test_a_failed_captures_log_goes_with_its_error_and_to_no_handler(
    handler: RaisingHandler, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TORCH_LOGS", raising=False)
    monkeypatch.setitem(registry.CAPTURES, "export", guard_error)
    with pytest.raises(CaptureError) as info:
        registry.capture("export", object())  # type: ignore[arg-type]
    assert (
        info.value.printed
        == "ERROR torch._export.serde.fake: Error while creating guard:\nName: ''"
    )
    assert handler.messages == []


def test_a_user_who_set_torch_logs_gets_them_as_torch_meant(
    handler: RaisingHandler, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TORCH_LOGS", "+dynamic")
    monkeypatch.setitem(registry.CAPTURES, "export", guard_error)
    with pytest.raises(CaptureError) as info:
        registry.capture("export", object())  # type: ignore[arg-type]
    assert info.value.printed == ""
    assert handler.messages == ["Error while creating guard:\nName: ''"]
