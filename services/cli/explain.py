"""`rekey explain --org ORG --interaction ID`: where the catalog routes one interaction's events, and why."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from kafka_rekey.services.cli.catalog_options import CatalogOption, open_catalog
from kafka_rekey.services.cli.errors import user_errors


def explain(
    org: Annotated[str, typer.Option("--org", help="Org (tenant) id.")],
    interaction: Annotated[str, typer.Option("--interaction", help="Interaction id.")],
    topic_family: Annotated[
        str | None, typer.Option("--topic-family", help="Family to route in [default: the catalog's default].")
    ] = None,
    catalog_path: CatalogOption = None,
) -> None:
    """Print the topic, key, partition, tier, salt bucket, key strategy and deciding catalog version (JSON)."""
    import msgspec

    from kafka_rekey.shared.routing import route

    with user_errors():
        catalog = open_catalog(catalog_path)
        family = topic_family or catalog.default_family
        try:
            decided = route(catalog, family, org, interaction)
        except KeyError as error:
            raise ValueError(error.args[0]) from None
    placement = msgspec.structs.asdict(decided)
    placement["partition"] = decided.partition  # of `partitions`, as Java's default partitioner picks it
    del placement["partitions"]
    typer.echo(json.dumps({"family": family, "org_id": org, "interaction_id": interaction, **placement}, indent=2))


def register(app: typer.Typer) -> None:
    app.command(name="explain")(explain)
