"""Write the input documents of the JSON cut cases (deterministic: run once, commit)."""

from __future__ import annotations

import json
import random
from pathlib import Path

HERE = Path(__file__).parent
rng = random.Random(10)
DIGITS = "ABCDEFabcdef0123456789+/"
WORDS = ("crash", "save", "löschen", "timeout", "render", "ユーザー", "panic", "null", "\"quoted\"",
         "path\\to\\file", "tab\there", "emoji 🚀", "newline\nin title")


def sentence(n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def issues(count: int) -> dict[str, object]:
    return {
        "total_count": count * 7,
        "incomplete_results": False,
        "items": [
            {
                "id": 1000000 + i, "number": i + 1, "title": sentence(6), "state": "open",
                "user": {"login": f"user{i % 97}", "id": 5000 + i % 97, "site_admin": False},
                "labels": [{"name": rng.choice(["bug", "p1", "docs"]), "color": "d73a4a"}],
                "comments": rng.randint(0, 40), "score": round(rng.random() * 100, 3),
                "created_at": f"2026-0{1 + i % 9}-1{i % 10}T12:00:00Z", "body": sentence(4),
            }
            for i in range(count)
        ],
    }


def pods(count: int) -> dict[str, object]:
    return {
        "apiVersion": "v1", "kind": "List",
        "items": [
            {
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": f"web-{i:04d}-7d9f8", "namespace": "default",
                             "labels": {"app": "web", "pod-template-hash": "7d9f8"},
                             "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-12-01"}},
                "spec": {"containers": [{"name": "web", "image": "nginx:1.27",
                                         "ports": [{"containerPort": 80, "protocol": "TCP"}],
                                         "env": [{"name": f"VAR_{k}", "value": str(k)}
                                                 for k in range(8)]}],
                         "nodeName": f"node-{i % 5}"},
                "status": {"phase": "Running" if i % 13 else "CrashLoopBackOff",
                           "podIP": f"10.0.{i // 250}.{i % 250}",
                           "containerStatuses": [{"name": "web", "ready": bool(i % 13),
                                                  "restartCount": 0 if i % 13 else 17}]},
            }
            for i in range(count)
        ],
        "metadata": {"resourceVersion": ""},
    }


def package_lock(count: int) -> dict[str, object]:
    packages: dict[str, object] = {"": {"name": "app", "version": "1.0.0",
                                        "dependencies": {"left-pad": "^1.3.0"}}}
    for i in range(count):
        name = f"node_modules/pkg-{i:04d}"
        packages[name] = {
            "version": f"{i % 9}.{i % 7}.{i % 5}",
            "resolved": f"https://registry.npmjs.org/pkg-{i:04d}/-/pkg-{i:04d}-1.0.0.tgz",
            "integrity": "sha512-" + "".join(rng.choice(DIGITS) for _ in range(86)),
            "dependencies": {f"pkg-{(i + k) % count:04d}": "^1.0.0" for k in range(1, 1 + i % 3)},
        }
    return {"name": "app", "version": "1.0.0", "lockfileVersion": 3, "requires": True,
            "packages": packages}


def search(size: int) -> dict[str, object]:
    lines = [f"{n}: {sentence(8)}" for n in range(size // 60)]
    return {"query": "panic", "took_ms": 12, "hits": 3,
            "results": [{"path": "src/main.rs", "line": 10, "snippet": "fn main() {"},
                        {"path": "logs/big.log", "line": 1, "content": "\n".join(lines)},
                        {"path": "README.md", "line": 3, "snippet": "panic: never"}]}


def main() -> None:
    issues_doc = issues(2000)
    (HERE / "rest_issues_compact.json").write_text(json.dumps(issues_doc, ensure_ascii=False))
    (HERE / "rest_issues_pretty.json").write_text(
        json.dumps(issues(600), indent=2, ensure_ascii=False) + "\n")
    (HERE / "kubectl_pods.json").write_text(json.dumps(pods(60), indent=4) + "\n")
    (HERE / "package_lock.json").write_text(json.dumps(package_lock(400), indent=2) + "\n")
    (HERE / "search_giant_string.json").write_text(json.dumps(search(100_000)))


if __name__ == "__main__":
    main()
