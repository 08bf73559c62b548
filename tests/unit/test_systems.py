"""The storage systems as plugins: the registry finds them, the labs' options carry their
sizing keys and the existing site their sections, and a system's backends place each byte
written as the system says."""

from __future__ import annotations

import pytest

from harness.api import registry
from harness.api.systems import LocalLab, System


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
    assert all(name in site for name, s in registry.systems().items() if "an existing site" in registry.places(s))
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



# ---------------------------------------------------------------- the contract, checked at load

CORE = ("name", "display", "contract", "client", "Service", "packages", "health_of", "placement")


def _whole() -> type:
    """A system that meets the contract: the core and the local lab with its faults."""
    from dataclasses import dataclass

    from harness.api.systems import CONTRACT, LocalFaults, Placement

    @dataclass
    class Facts:
        root: str

    class Whole(System, LocalFaults):
        name, display, contract, client, Service = "whole", "Whole", CONTRACT, "a directory", Facts
        packages = ("fuse3",)

        @classmethod
        def health_of(cls, service, via):
            return True, "fine"

        @classmethod
        def placement(cls, description):
            return Placement.described(description)

        def start_processes(self, offer):
            return Facts(str(offer.root))

        def local_nodes(self, service):
            return ["n1"]

    return Whole


def test_a_system_that_meets_its_contract_passes_and_says_where_it_runs():
    whole = _whole()
    assert registry._contract("system", "whole", whole) == []
    assert registry.places(whole) == ["the local lab"] and registry.places(whole, faults=True) == ["the local lab"]
    for found in registry.systems().values():  # (the built-in systems: everywhere)
        assert sorted(registry.places(found)) == ["an existing site", "the container lab", "the local lab"]


@pytest.mark.parametrize("change, said", [
    # an empty System (its abstract methods not implemented) names each one missing
    (lambda W: type("Empty", (System,), {"name": "whole"}), "does not implement health_of, placement"),
    # a capability declared and not met
    (lambda W: type("Half", (System, LocalLab), {k: v for k, v in vars(W).items() if k in CORE}),
     "does not implement start_processes"),
    (lambda W: type("Old", (W,), {"contract": 1}), "declares contract version 1; this dfsbench speaks version 2"),
    (lambda W: type("Unsaid", (W,), {"contract": None}), "declares no contract version"),
    (lambda W: type("Shell", (W,), {"packages": ("fuse3; curl evil",)}), "packages that are not a tuple of Debian"),
    (lambda W: type("Listed", (W,), {"packages": ["fuse3"]}), "packages that are not a tuple of Debian"),
    (lambda W: type("Mute", (W,), {"client": ""}), "declares no client"),
    (lambda W: type("Loose", (W,), {"Service": dict}), "has a Service that is not a dataclass"),
    (lambda W: type("Sized", (W,), {"LocalOptions": dict}), "has a LocalOptions that is not"),
    # a method that does not take what the contract passes, or is not a classmethod where it must be
    (lambda W: type("Deaf", (W,), {"start_processes": lambda self: None}),
     "start_processes(self) does not take what the contract passes: start_processes(self, offer)"),
    (lambda W: type("Renamed", (W,), {"local_nodes": lambda self, facts: []}),
     "local_nodes(self, facts) does not take what the contract passes: local_nodes(self, service)"),
    (lambda W: type("Bound", (W,), {"health_of": lambda self, service, via: (True, "")}),
     "health_of must be a classmethod"),
    (lambda W: type("Static", (W,), {"start_processes": staticmethod(lambda self, offer: None)}),
     "start_processes must not be a staticmethod"),
    (lambda W: type("Keyed", (W,), {"start_processes": lambda self, offer, *, must: None}),
     "start_processes(self, offer) does not take what the contract passes"),
    (lambda W: type("Float", (W,), {"contract": 2.0}), "declares contract version 2.0"),
])
def test_a_system_that_breaks_its_contract_is_refused_at_load_naming_what_is_missing(change, said):
    broken = change(_whole())
    problems = registry._contract("system", "whole", broken)
    assert any(said in p for p in problems), problems


def test_a_method_with_more_parameters_passes_where_they_have_defaults():
    whole = _whole()
    kind = type("Kind", (whole,), {"local_nodes": lambda self, service, extra=1: []})
    assert registry._contract("system", "whole", kind) == []
    strict = type("Strict", (whole,), {"local_nodes": lambda self, service, extra: []})
    assert registry._contract("system", "whole", strict) == [
        "local_nodes(self, service, extra) does not take what the contract passes: local_nodes(self, service)"]
    keyed = type("Keyed", (whole,), {"local_nodes": lambda self, service, *, extra=1, **more: []})
    assert registry._contract("system", "whole", keyed) == []
