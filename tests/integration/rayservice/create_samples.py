#!/usr/bin/env python3
"""create_samples.py URL NS=FILE... - tests/integration/rayjob/create_samples.py with the
kinds the RayService samples also carry (RayService, Secret, Service, Pod); other kinds
(apps/v1 Deployment, which kubesim does not serve) are skipped, as kubectl would fail on
them ("no matches for kind")."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "rayjob"))
import create_samples  # noqa: E402

create_samples.PATHS.update({
    "RayService": "/apis/ray.io/v1/namespaces/{ns}/rayservices",
    "Secret": "/api/v1/namespaces/{ns}/secrets",
    "Service": "/api/v1/namespaces/{ns}/services",
    "Pod": "/api/v1/namespaces/{ns}/pods",
})

if __name__ == "__main__":
    sys.exit(create_samples.main())
