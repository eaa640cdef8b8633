"""templates/configmap-catalog.yaml: the topic catalog, mounted at /etc/rekey/catalog.yaml."""

from __future__ import annotations

import pytest
import yaml

from ..rendering import default_values, full_name, render


def test_default_catalog_is_a_valid_rekey_catalog() -> None:
    catalog = pytest.importorskip("kafka_rekey.shared.catalog")

    parsed = catalog.parse_catalog(default_values()["catalog"], "values.yaml: catalog")

    assert parsed.default_family == "interaction_events"
    assert {"interaction_events_high_v2", "interaction_events_low_v2"} <= {t.name for t in parsed.topics}


def test_configmap_carries_the_catalog_verbatim() -> None:
    text = "version: 9\nfamilies: []\n"

    configmap = render({"catalog": text}).get("ConfigMap", full_name("catalog"))

    assert configmap["data"] == {"catalog.yaml": text}


def test_a_catalog_given_as_a_map_is_serialised_to_yaml() -> None:
    catalog = {"version": 3, "default_family": "interaction_events"}

    configmap = render({"catalog": catalog}).get("ConfigMap", full_name("catalog"))

    assert yaml.safe_load(configmap["data"]["catalog.yaml"]) == catalog


def test_catalog_is_mounted_where_rekey_catalog_path_points() -> None:
    pod = render().get("Deployment", full_name("projection"))["spec"]["template"]["spec"]
    (container,) = pod["containers"]

    path = next(e["value"] for e in container["env"] if e["name"] == "REKEY_CATALOG_PATH")
    directory, filename = path.rsplit("/", 1)
    mount = next(m for m in container["volumeMounts"] if m["mountPath"] == directory)
    volume = next(v for v in pod["volumes"] if v["name"] == mount["name"])
    assert mount["readOnly"] is True
    assert volume["configMap"]["name"] == full_name("catalog")
    assert volume["configMap"]["items"] == [{"key": "catalog.yaml", "path": filename}]
