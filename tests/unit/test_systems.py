"""The storage systems as plugins: the registry finds them, the labs' options carry their
sizing keys and the existing site their sections, and a system's backends place each byte
written as the system says."""

from __future__ import annotations

import pytest

from harness.api import registry
from harness.api.systems import System


def test_the_registry_finds_every_system_and_checks_its_contract():
    found = registry.systems()
    assert {"ceph", "gluster"} <= set(found)
    for name, system in found.items():
        assert issubclass(system, System) and system.name == name and system.display


def test_each_lab_takes_its_systems_sizing_keys_and_the_site_their_sections():
    from environments.docker import DockerEnvironment
    from environments.existing import ExistingEnvironment
    from environments.local import LocalEnvironment

    for env, part in ((LocalEnvironment, "LocalOptions"), (DockerEnvironment, "ContainerOptions")):
        for system in registry.systems().values():
            assert set(getattr(system, part).model_fields) <= set(env.Options.model_fields), (env.name, system.name)
    site = ExistingEnvironment.Options.model_fields
    assert all(name in site for name, s in registry.systems().items() if s.Site is not None)
    # a system's own validator still speaks for its keys in the composed model
    with pytest.raises(ValueError, match="ceph_replicas: 4 copies need as many OSDs"):
        LocalEnvironment.Options(ceph_osds=3, ceph_replicas=4)
    with pytest.raises(ValueError, match="cannot form replica-3 sets"):
        LocalEnvironment.Options(gluster_bricks=4)


@pytest.mark.parametrize("backend, description, copies, client_sends, taken_in", [
    # a disperse volume of 6 bricks, 2 redundant: 1.5 bytes kept, all sent by the client
    # (its 'replicas' is not set: read naively, 1 copy)
    ("glusterfs", {"volume_type": "disperse", "bricks": 6, "redundancy": 2}, 1.5, 1.5, 1.5),
    ("glusterfs", {"volume_type": "replicate", "replicas": 3}, 3.0, 3.0, 3.0),
    # an erasure-coded pool of 4+2 whose description still says 3 replicas (the cluster's
    # default size): 1.5 kept, the client sends each byte once, the nodes take in 2.25
    ("cephfs", {"replicas": 3, "erasure_code": {"k": 4, "m": 2}}, 1.5, 1.0, 2.25),
    ("rados", {"replicas": 3}, 3.0, 1.0, 3.0),
    # replication 002 (its description names no 'replicas': read naively, 1 copy): three
    # copies, the volume servers sending on the two others
    ("seaweedfs", {"replication": "002"}, 3.0, 1.0, 3.0),
])
def test_a_backend_places_each_byte_as_its_system_says(backend, description, copies, client_sends, taken_in):
    cls = registry.load("backend", backend)
    system = registry.load("system", next(iter(cls.requires)))
    assert cls.placement(description) == system.placement(description)
    facts = cls.facts(description)
    assert (facts.stored_copies, facts.write_copies, facts.taken_in or facts.stored_copies) == \
        (copies, client_sends, taken_in)

