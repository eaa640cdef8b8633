"""The source formats rekey translates (the catalog's `format` of a source topic): standard library only, so that
the command line can offer them without importing the translation."""

from __future__ import annotations

from enum import StrEnum


class SourceFormat(StrEnum):
    """Source formats rekey translates (the catalog's `format` of a source topic)."""

    CCAAS_JSON = "ccaas-json"
    """Contact-centre (CCaaS) event-stream JSON, one interaction event per record: the simplified shape rekey's
    generator and demo write (`shared.translation.event_stream`)."""
    DEBEZIUM = "debezium"
    """Debezium change events of the `interactions` table (JSON converter, with or without schema wrapper)."""
    AMAZON_CONNECT = "amazon-connect"
    """Amazon Connect contact events as EventBridge delivers them (a mapping preset)."""
    GENESYS_EVENTBRIDGE = "genesys-eventbridge"
    """Genesys Cloud events as Amazon EventBridge delivers them (a mapping preset)."""
    GENESYS_NOTIFICATIONS = "genesys-notifications"
    """Genesys Cloud Notification API messages (a mapping preset; the org comes from the source declaration)."""
