"""Mapping presets for vendors' source formats (`shared.translation.mapping`), each tested against the vendor's
published examples (tests/fixtures/sources/<preset>/, origins in each folder's README).

A catalog source names a preset as its `format` and may replace any of its fields with a `mapping`
(`genesys-notifications` carries no org id: its sources must declare one).
"""

from __future__ import annotations

from typing import Any, Final

from kafka_rekey.shared.translation.mapping import MappingOverrides
from kafka_rekey.shared.translation.source import SourceFormat


def _mapping(**fields: Any) -> MappingOverrides:
    return MappingOverrides.model_validate(fields)


AMAZON_CONNECT = _mapping(
    # Amazon Connect contact events as EventBridge delivers them (Amazon Connect Administrator Guide, "Amazon
    # Connect contact events"). The org is the Connect instance: the id in the instance ARN (`instanceARN` in
    # older events). The initial contact stays the same across transfers. EventBridge repeats the envelope `id`
    # when it delivers an event again. The event time is the event's own timestamp for its type.
    org_id=[{"path": "detail.instanceArn", "pattern": r":instance/([^/]+)"},
            {"path": "detail.instanceARN", "pattern": r":instance/([^/]+)"}],
    interaction_id=[{"path": "detail.initialContactId"}, {"path": "detail.contactId"}],
    event_id={"path": "id"},
    event_type={"path": "detail.eventType"},
    interaction_type={"path": "detail.channel", "lowercase": True},
    event_time=[{"path": "detail.disconnectTimestamp"}, {"path": "detail.agentInfo.connectedToAgentTimestamp"},
                {"path": "detail.queueInfo.enqueueTimestamp"}, {"path": "detail.connectedToSystemTimestamp"},
                {"path": "detail.initiationTimestamp"}, {"path": "time"}],
    payload="detail",
    only=[{"path": "detail-type", "equals": ["Amazon Connect Contact Event"]}],
)

_GENESYS_INTERACTION_TOPICS = ("v2.detail.events.conversation.", "v2.conversations.")
_CONVERSATION_IN_TOPIC = r"\.conversations?\.([0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12})"

GENESYS_EVENTBRIDGE = _mapping(
    # Genesys Cloud events through the Amazon EventBridge integration. The org id is in the partner event
    # source, `aws.partner/genesys.com/cloud/<orgId>/<name>` (test orgs: `genesys.com.test`). `detail-type` is
    # the subscribed topic with its `{id}` wildcard; `detail.topicName` is the concrete topic, whose ids become
    # `{id}` in the event type. Detail events carry `eventTime` in epoch ms; others fall back on
    # `detail.timestamp`, then the envelope's `time`. Audits, presence and other topics are counted skips.
    org_id={"path": "source", "pattern": r"^aws\.partner/genesys\.com[^/]*/cloud/([^/]+)/"},
    interaction_id=[{"path": "detail.eventBody.conversationId"},
                    {"path": "detail.topicName", "pattern": _CONVERSATION_IN_TOPIC}],
    event_id={"path": "id"},
    event_type={"path": "detail.topicName", "ids": "template"},
    interaction_type={"path": "detail.eventBody.mediaType", "lowercase": True},
    event_time=[{"path": "detail.eventBody.eventTime"}, {"path": "detail.timestamp"}, {"path": "time"}],
    payload="detail.eventBody",
    only=[{"path": "detail.topicName", "prefixes": list(_GENESYS_INTERACTION_TOPICS)}],
)

GENESYS_NOTIFICATIONS = _mapping(
    # Genesys Cloud Notification API messages (`topicName`, `version`, `eventBody`, `metadata`), as a bridge
    # writes them to Kafka. They carry no org id: the source declaration gives it (`mapping.org_id`). The
    # notification's `metadata.CorrelationId` is its id; a heartbeat (`channel.metadata`) is a counted skip.
    interaction_id=[{"path": "eventBody.conversationId"}, {"path": "topicName", "pattern": _CONVERSATION_IN_TOPIC}],
    event_id={"path": "metadata.CorrelationId"},
    event_type={"path": "topicName", "ids": "template"},
    interaction_type={"path": "eventBody.mediaType", "lowercase": True},
    event_time=[{"path": "eventBody.eventTime"}, {"path": "eventBody.timestamp"}, {"record_timestamp": True}],
    payload="eventBody",
    skip=[{"path": "topicName", "equals": ["channel.metadata"], "reason": "heartbeat"}],
    only=[{"path": "topicName", "prefixes": list(_GENESYS_INTERACTION_TOPICS)}],
)

PRESETS: Final[dict[SourceFormat, MappingOverrides]] = {
    SourceFormat.AMAZON_CONNECT: AMAZON_CONNECT,
    SourceFormat.GENESYS_EVENTBRIDGE: GENESYS_EVENTBRIDGE,
    SourceFormat.GENESYS_NOTIFICATIONS: GENESYS_NOTIFICATIONS,
}
