"""The simulated cluster's controllers: GPU nodes, scheduler, StatefulSets, kubelet, Services.

Each module keeps its decisions in small functions over plain dicts (unit-tested without a
server); :mod:`nemotron_sim.controllers.runtime` wires them to the API stand-in's store.
A simulation: nothing here talks to a real kubelet, GPU or container runtime.
"""
