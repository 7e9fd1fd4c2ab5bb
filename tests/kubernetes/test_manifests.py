"""The kustomize base (deploy/kubernetes/base), the per-cluster overlays (east,
west), the rules applied once (deploy/kubernetes/rules) and the two-cluster
example, rendered by `kubectl kustomize` and validated: core objects against the
Kubernetes schemas of a current release (kubernetes-validate, offline), the
ServiceMonitor and the PrometheusRule against the Prometheus Operator's CRDs
stored in tests/kubernetes/crds. Two clusters in one namespace collide with
nothing: names, and every selector, are each cluster's own.
"""

from __future__ import annotations

import copy
import re
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from devkit import mixin
from devkit.tools import tool
from exporter.backlogs import parse_declarations
from exporter.settings import DEFAULT_PORT, OPTIONS_BY_NAME
from exporter.timeouts import Timeouts, header_wait
from exporter.tools.healthcheck import PATH as HEALTHY_PATH
from registry import VERSION
from tests.alerts.shorten import parse_duration

REPO_ROOT = Path(__file__).resolve().parents[2]
KUBERNETES_DIR = REPO_ROOT / "deploy" / "kubernetes"
BASE = KUBERNETES_DIR / "base"
OVERLAY = KUBERNETES_DIR / "overlays" / "east"
RULES = KUBERNETES_DIR / "rules"
TWO_CLUSTERS = KUBERNETES_DIR / "examples" / "two-clusters"
CRDS = Path(__file__).parent / "crds"
# The newest Kubernetes release whose schemas kubernetes-validate bundles.
KUBERNETES_VERSION = kubernetes_validate.latest_version()
CORE_KINDS = {"ConfigMap", "Service", "Deployment", "PodDisruptionBudget"}
OPERATOR_KINDS = {"ServiceMonitor": "servicemonitors", "PrometheusRule": "prometheusrules"}
NAME = "orpycamcp-exporter"
# The mixin's default clusterLabel.
CLUSTER_LABEL = "orpycamcp_cluster"


def kustomize(directory: Path) -> list[dict[str, Any]]:
    result = subprocess.run(
        [tool("kubectl"), "kustomize", str(directory)], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    assert not result.stderr, result.stderr  # no deprecated field, no warning
    return [document for document in yaml.safe_load_all(result.stdout) if document]


@pytest.fixture(scope="module")
def base() -> list[dict[str, Any]]:
    return kustomize(BASE)


@pytest.fixture(scope="module")
def overlay() -> list[dict[str, Any]]:
    return kustomize(OVERLAY)


@pytest.fixture(scope="module")
def rules() -> list[dict[str, Any]]:
    return kustomize(RULES)


@pytest.fixture(scope="module")
def two_clusters() -> list[dict[str, Any]]:
    return kustomize(TWO_CLUSTERS)


def only(documents: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    found = [document for document in documents if document["kind"] == kind]
    assert len(found) == 1, f"{len(found)} {kind} objects"
    return found[0]


def closed(schema: Any) -> Any:
    """The CRD schema with unknown fields rejected (the API server's strict field
    validation), where the schema lists its properties and keeps no unknown field."""
    if isinstance(schema, dict):
        schema = {key: closed(value) for key, value in schema.items()}
        if (
            "properties" in schema
            and "additionalProperties" not in schema
            and not schema.get("x-kubernetes-preserve-unknown-fields")
        ):
            schema["additionalProperties"] = False
        return schema
    if isinstance(schema, list):
        return [closed(item) for item in schema]
    return schema


def crd_schema(kind: str) -> dict[str, Any]:
    crd = yaml.safe_load((CRDS / f"monitoring.coreos.com_{OPERATOR_KINDS[kind]}.yaml").read_text(encoding="utf-8"))
    assert crd["spec"]["names"]["kind"] == kind
    assert crd["metadata"]["annotations"]["operator.prometheus.io/version"] == "0.93.0"
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    schema: dict[str, Any] = closed(version["schema"]["openAPIV3Schema"])
    return schema


def validation_errors(document: dict[str, Any]) -> list[str]:
    """Every schema error of one rendered object (empty: valid)."""
    if document["kind"] in OPERATOR_KINDS:
        assert document["apiVersion"] == "monitoring.coreos.com/v1"
        validator = jsonschema.Draft7Validator(crd_schema(document["kind"]))
        return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(document)]
    try:
        kubernetes_validate.validate(document, KUBERNETES_VERSION, strict=True)
    except kubernetes_validate.ValidationError as error:
        return [f"{'/'.join(map(str, error.path))}: {error.message}"]
    return []


# --- rendering and validation --------------------------------------------------------


def test_base_renders_every_object_once(base: list[dict[str, Any]]) -> None:
    kinds = Counter(document["kind"] for document in base)
    print(f"\nkubectl kustomize deploy/kubernetes/base: {dict(sorted(kinds.items()))}")
    assert kinds == Counter(CORE_KINDS | {"ServiceMonitor"})


def test_overlay_adds_the_secret(overlay: list[dict[str, Any]]) -> None:
    kinds = Counter(document["kind"] for document in overlay)
    print(f"\nkubectl kustomize deploy/kubernetes/overlays/east: {dict(sorted(kinds.items()))}")
    assert kinds == Counter(CORE_KINDS | {"ServiceMonitor", "Secret"})
    assert {document["metadata"].get("namespace") for document in overlay} == {"monitoring"}


def test_rules_are_apart_and_once(rules: list[dict[str, Any]], two_clusters: list[dict[str, Any]]) -> None:
    assert [document["kind"] for document in rules] == ["PrometheusRule"]
    kinds = Counter(document["kind"] for document in two_clusters)
    print(f"\nkubectl kustomize deploy/kubernetes/examples/two-clusters: {dict(sorted(kinds.items()))}")
    assert kinds == Counter({**dict.fromkeys(CORE_KINDS | {"ServiceMonitor", "Secret"}, 2), "PrometheusRule": 1})


def selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return selector.items() <= labels.items()


def test_two_clusters_in_one_namespace_collide_with_nothing(two_clusters: list[dict[str, Any]]) -> None:
    """Every name is unique per kind, and each Service, ServiceMonitor, PodDisruptionBudget
    and topology spread selects the pods of its own cluster's Deployment only."""
    names = Counter((d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"]) for d in two_clusters)
    assert all(count == 1 for count in names.values()), names
    deployments = [d for d in two_clusters if d["kind"] == "Deployment"]
    services = [d for d in two_clusters if d["kind"] == "Service"]
    pods = {d["metadata"]["name"]: d["spec"]["template"]["metadata"]["labels"] for d in deployments}
    assert len(pods) == 2
    for deployment in deployments:
        own = deployment["metadata"]["name"]
        pod = deployment["spec"]["template"]["spec"]
        chosen = [
            ("Deployment", deployment["spec"]["selector"]["matchLabels"]),
            ("topology spread", pod["topologySpreadConstraints"][0]["labelSelector"]["matchLabels"]),
        ]
        suffix = own.removeprefix(NAME)
        for kind in ("Service", "PodDisruptionBudget", "ServiceMonitor"):
            (document,) = [d for d in two_clusters if d["kind"] == kind and d["metadata"]["name"] == NAME + suffix]
            selector = document["spec"]["selector"]
            chosen.append((kind, selector.get("matchLabels", selector)))
        for kind, selector in chosen:
            matched = {name for name, labels in pods.items() if selects(selector, labels)}
            assert matched == {own}, (kind, own, selector)
    # Each ServiceMonitor reaches one Service, and that Service one Deployment's pods.
    for monitor in (d for d in two_clusters if d["kind"] == "ServiceMonitor"):
        reached = [s for s in services if selects(monitor["spec"]["selector"]["matchLabels"], s["metadata"]["labels"])]
        assert len(reached) == 1, monitor["metadata"]["name"]
    clusters = {
        only_relabel(monitor): monitor["metadata"]["name"]
        for monitor in two_clusters
        if monitor["kind"] == "ServiceMonitor"
    }
    assert clusters == {"east": f"{NAME}-east", "west": f"{NAME}-west"}
    # One job for both (the rules' selector), so the rules total the platform over them.
    assert {monitor["spec"]["jobLabel"] for monitor in two_clusters if monitor["kind"] == "ServiceMonitor"} == {
        "app.kubernetes.io/name"
    }


def only_relabel(monitor: dict[str, Any]) -> str:
    (endpoint,) = monitor["spec"]["endpoints"]
    (relabel,) = [r for r in endpoint["relabelings"] if r["targetLabel"] == CLUSTER_LABEL]
    value: str = relabel["replacement"]
    return value


@pytest.mark.parametrize("which", ["base", "overlay", "rules", "two_clusters"])
def test_every_object_validates(which: str, request: pytest.FixtureRequest) -> None:
    documents: list[dict[str, Any]] = request.getfixturevalue(which)
    report = {f"{d['kind']}/{d['metadata']['name']}": validation_errors(d) for d in documents}
    for name, errors in report.items():
        print(f"{which} {name}: {errors or 'valid'}")
    assert report
    assert all(not errors for errors in report.values()), report


def test_validation_catches_broken_objects(base: list[dict[str, Any]]) -> None:
    """The validators can fail: a mistyped field or a wrong type is reported."""
    deployment = copy.deepcopy(only(base, "Deployment"))
    deployment["spec"]["replicas"] = "two"
    assert validation_errors(deployment)
    monitor = copy.deepcopy(only(base, "ServiceMonitor"))
    monitor["spec"]["endpoints"][0]["scrapeTimout"] = "12s"
    assert any("scrapeTimout" in error for error in validation_errors(monitor))
    rule = copy.deepcopy(only(kustomize(RULES), "PrometheusRule"))
    rule["spec"]["groups"][0]["rules"][0]["for"] = 5
    assert validation_errors(rule)


# --- the objects say what the exporter does --------------------------------------------


def test_prometheus_rule_is_exactly_the_rendered_rules(rules: list[dict[str, Any]]) -> None:
    rule = only(rules, "PrometheusRule")
    rules_file = yaml.safe_load((REPO_ROOT / "alerts" / "orpycamcp.rules.yml").read_text(encoding="utf-8"))
    assert rule["spec"] == {"groups": rules_file["groups"]}
    tool("jsonnet")
    assert rule["spec"]["groups"] == mixin.rule_groups(mixin.evaluate())


def container(documents: list[dict[str, Any]]) -> dict[str, Any]:
    (exporter,) = only(documents, "Deployment")["spec"]["template"]["spec"]["containers"]
    assert isinstance(exporter, dict)
    return exporter


def test_deployment_runs_restricted(base: list[dict[str, Any]]) -> None:
    deployment = only(base, "Deployment")
    assert deployment["spec"]["replicas"] == 2
    pod = deployment["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] != 0
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert pod["automountServiceAccountToken"] is False
    context = container(base)["securityContext"]
    assert context["readOnlyRootFilesystem"] is True
    assert context["allowPrivilegeEscalation"] is False
    assert context["capabilities"] == {"drop": ["ALL"]}
    assert context["runAsNonRoot"] is True
    resources = container(base)["resources"]
    assert set(resources) == {"requests", "limits"}
    assert {"cpu", "memory"} <= set(resources["requests"])
    assert "memory" in resources["limits"]


def test_probes_use_the_exporters_health_paths(base: list[dict[str, Any]]) -> None:
    exporter = container(base)
    (port,) = exporter["ports"]
    assert port["containerPort"] == DEFAULT_PORT
    assert exporter["livenessProbe"]["httpGet"] == {"path": HEALTHY_PATH, "port": port["name"]}
    assert exporter["readinessProbe"]["httpGet"] == {"path": "/-/ready", "port": port["name"]}
    routes = (REPO_ROOT / "exporter" / "http" / "app.py").read_text(encoding="utf-8")
    assert f'Route("{HEALTHY_PATH}"' in routes
    assert 'Route("/-/ready"' in routes


def mounted_file(documents: list[dict[str, Any]], env: str) -> tuple[str, str]:
    """The volume and the key within it that the file named by `env` comes from."""
    exporter = container(documents)
    value = {item["name"]: item["value"] for item in exporter["env"]}[env]
    for mount in exporter["volumeMounts"]:
        directory = mount["mountPath"].rstrip("/") + "/"
        if value.startswith(directory):
            assert mount["readOnly"] is True
            return mount["name"], value.removeprefix(directory)
    raise AssertionError(f"{env}={value} is on no mounted volume")


def volume(documents: list[dict[str, Any]], name: str) -> dict[str, Any]:
    volumes = only(documents, "Deployment")["spec"]["template"]["spec"]["volumes"]
    (found,) = [item for item in volumes if item["name"] == name]
    assert isinstance(found, dict)
    return found


def test_urls_come_from_the_secret_as_files(overlay: list[dict[str, Any]]) -> None:
    secret = only(overlay, "Secret")
    exporter = container(overlay)
    names = {item["name"] for item in exporter["env"]}
    in_environment = {*OPTIONS_BY_NAME["database_url"].envs, *OPTIONS_BY_NAME["redis_url"].envs}
    assert in_environment
    assert not names & in_environment, "URLs carry credentials: files only"
    for option in ("database_url_file", "redis_url_file"):
        env = OPTIONS_BY_NAME[option].env
        assert env is not None
        volume_name, key = mounted_file(overlay, env)
        source = volume(overlay, volume_name)["secret"]
        assert source["secretName"] == secret["metadata"]["name"]
        assert key in secret["data"]
        assert source["defaultMode"] & 0o007 == 0, "the URL files are not world-readable"


def test_backlogs_come_from_the_config_map(base: list[dict[str, Any]], overlay: list[dict[str, Any]]) -> None:
    env = OPTIONS_BY_NAME["backlogs_config_file"].env
    assert env is not None
    for documents in (base, overlay):
        volume_name, key = mounted_file(documents, env)
        config_map = only(documents, "ConfigMap")
        assert volume(documents, volume_name)["configMap"]["name"] == config_map["metadata"]["name"]
        declared = parse_declarations(config_map["data"][key], env).backlogs
        assert declared
    base_file = (BASE / "backlogs.yml").read_text(encoding="utf-8")
    assert base_file == (REPO_ROOT / "deploy" / "backlogs.example.yml").read_text(encoding="utf-8")
    assert only(overlay, "ConfigMap")["data"]["backlogs.yml"] == (OVERLAY / "backlogs.yml").read_text(encoding="utf-8")


def test_image_is_this_version(base: list[dict[str, Any]], overlay: list[dict[str, Any]]) -> None:
    assert container(base)["image"] == f"{NAME}:{VERSION}"
    assert container(overlay)["image"].endswith(f"/{NAME}:{VERSION}")


def test_service_monitor_scrapes_within_the_exporters_timeouts(base: list[dict[str, Any]]) -> None:
    service = only(base, "Service")
    monitor = only(base, "ServiceMonitor")
    (port,) = service["spec"]["ports"]
    assert port["port"] == DEFAULT_PORT
    assert port["targetPort"] == container(base)["ports"][0]["name"]
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["port"] == port["name"]
    assert endpoint["path"] == "/metrics"
    interval, timeout = parse_duration(endpoint["interval"]), parse_duration(endpoint["scrapeTimeout"])
    assert timeout < interval
    option = OPTIONS_BY_NAME["deadline"]
    assert option.default is not None
    timeouts = Timeouts(float(option.default))
    assert timeouts.bounded_wait(header_wait(timeout)) >= timeouts.scrape_budget


def test_job_label_is_the_rules_job(base: list[dict[str, Any]], overlay: list[dict[str, Any]]) -> None:
    """The ServiceMonitor names the job after a label whose value is the mixin's default job."""
    for documents in (base, overlay):
        monitor = only(documents, "ServiceMonitor")
        label = monitor["spec"]["jobLabel"]
        assert only(documents, "Service")["metadata"]["labels"][label] == NAME
    rules = (REPO_ROOT / "alerts" / "orpycamcp.rules.yml").read_text(encoding="utf-8")
    assert set(re.findall(r'\bjob="([^"]+)"', rules)) == {NAME}


def test_overlay_labels_its_targets_with_the_cluster(overlay: list[dict[str, Any]]) -> None:
    (endpoint,) = only(overlay, "ServiceMonitor")["spec"]["endpoints"]
    assert {"action": "replace", "targetLabel": CLUSTER_LABEL, "replacement": "east"} in endpoint["relabelings"]
    tool("jsonnet")
    assert mixin.default_config()["clusterLabel"] == CLUSTER_LABEL


def test_disruption_budget_keeps_a_replica(base: list[dict[str, Any]]) -> None:
    budget = only(base, "PodDisruptionBudget")
    deployment = only(base, "Deployment")
    assert budget["spec"]["selector"] == deployment["spec"]["selector"]
    assert budget["spec"]["maxUnavailable"] == 1
    assert deployment["spec"]["replicas"] > budget["spec"]["maxUnavailable"]
