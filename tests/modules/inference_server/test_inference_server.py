"""``tdrl.modules.inference_server``: real threads and processes, tiny policies, every wait bounded."""

from __future__ import annotations

import multiprocessing as mp
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import InteractionType, TensorDictModule, interaction_type

from tdrl.modules.inference_server import (
    InferenceDeviceConfig,
    InferenceServer,
    InferenceServerConfig,
    MPTransport,
    PolicyClientModule,
    ThreadingTransport,
)
from tdrl.modules.inference_server._mp import ServerGoneError
from tests.modules.inference_server._helpers import mp_actor

WAIT = 20.0  # seconds: the longest any test waits for an answer (a loaded 2-core machine)


def make_policy() -> TensorDictModule:
    torch.manual_seed(0)
    return TensorDictModule(torch.nn.Linear(3, 2), in_keys=["observation"], out_keys=["action"])


class ModeProbe(torch.nn.Module):
    """Writes 1 under DETERMINISTIC interaction, 0 otherwise (how the server ran the request)."""

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return torch.full((*obs.shape[:-1], 1), float(interaction_type() == InteractionType.DETERMINISTIC))


@pytest.fixture
def server_factory():
    servers = []

    def make(*args, **kwargs):
        server = InferenceServer(*args, **kwargs).start()
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.shutdown(timeout=WAIT)
        assert not server.is_alive


@pytest.fixture
def processes():
    procs: list = []
    yield procs
    for proc in procs:
        proc.join(timeout=WAIT)
        if proc.is_alive():
            proc.terminate()
            proc.join(timeout=5)


def test_threads_are_batched_and_answered_correctly(server_factory):
    policy = make_policy()
    transport = ThreadingTransport()
    server = server_factory(policy, transport, max_batch_size=16, min_batch_size=4, timeout=0.05)
    inputs = torch.randn(8, 10, 3)

    def actor(i: int) -> torch.Tensor:
        client = transport.client()
        return torch.stack([client.submit(TensorDict({"observation": inputs[i, t]})).result(timeout=WAIT)["action"]
                            for t in range(10)])

    with ThreadPoolExecutor(8) as pool:
        answers = torch.stack(list(pool.map(actor, range(8))))
    torch.testing.assert_close(answers, policy.module(inputs).detach())
    stats = server.stats()
    assert stats["requests"] == 80
    assert stats["avg_batch_size"] > 1.0  # several actors were served by one forward pass
    assert stats["batches"] < 80


@pytest.mark.timeout(600)
def test_process_clients_through_mp_transport(server_factory, processes):
    policy = make_policy()
    transport = MPTransport()
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    clients = [transport.client() for _ in range(2)]
    server_factory(policy, transport, max_batch_size=8)
    for i, client in enumerate(clients):
        proc = ctx.Process(target=mp_actor, args=(client, i, 4, out), daemon=True)
        proc.start()
        processes.append(proc)
    results = [out.get(timeout=240) for _ in range(8)]  # spawning torch children takes a minute on a loaded machine
    for obs, action in results:
        torch.testing.assert_close(torch.tensor(action), policy.module(torch.tensor(obs)).detach())
    for proc in processes:
        proc.join(timeout=90)  # a spawned torch process takes seconds to exit on a loaded machine
        assert proc.exitcode == 0
    transport.close()


def test_blocked_mp_client_raises_when_server_stops():
    transport = MPTransport()
    client = transport.client()
    future = client.submit(TensorDict({"observation": torch.zeros(3)}))  # no server: never answered
    with pytest.raises(TimeoutError, match="within 0.2 s"):
        future.result(timeout=0.2)
    threading.Timer(0.2, transport.close).start()
    with pytest.raises(ServerGoneError, match="stopped before answering"):
        future.result(timeout=WAIT)


def test_model_error_reaches_client_and_loop_survives(server_factory):
    calls = {"n": 0}

    def flaky(td):
        calls["n"] += 1
        if calls["n"] == 1:
            raise ValueError("bad batch")
        return td.set("action", td["observation"] * 2)

    server = server_factory(flaky, "thread")
    client = server.client()
    with pytest.raises(ValueError, match="bad batch"):
        client.submit(TensorDict({"observation": torch.ones(3)})).result(timeout=WAIT)
    out = client.submit(TensorDict({"observation": torch.ones(3)})).result(timeout=WAIT)
    torch.testing.assert_close(out["action"], torch.full((3,), 2.0))


def test_shutdown_fails_pending_requests():
    transport = ThreadingTransport()
    server = InferenceServer(make_policy(), transport)
    future = transport.submit(TensorDict({"observation": torch.zeros(3)}))
    server._shutdown_event.set()
    server._run()  # the loop exits at once and answers what is still queued
    with pytest.raises(RuntimeError, match="shut down"):
        future.result(timeout=WAIT)


def test_policy_version_follows_update_model(server_factory):
    policy = make_policy()
    server = server_factory(policy, "auto", policy_version=3)
    client = server.client()
    request = TensorDict({"observation": torch.ones(3)})
    assert int(client.submit(request.clone()).result(timeout=WAIT)["policy_version"]) == 3
    server.update_model(lambda model: model.module.weight.data.zero_())
    out = client.submit(request.clone()).result(timeout=WAIT)
    assert int(out["policy_version"]) == 4 and server.policy_version == 4
    torch.testing.assert_close(out["action"], policy.module.bias.detach())
    assert server.stats()["weight_updates"] == 1


def test_policy_client_module_carries_interaction_type(server_factory):
    probe = TensorDictModule(ModeProbe(), in_keys=["observation"], out_keys=["action"])
    transport = ThreadingTransport()
    server_factory(probe, transport)
    td = TensorDict({"observation": torch.zeros(3)})
    deterministic = PolicyClientModule(transport, interaction_type=InteractionType.DETERMINISTIC)
    random = PolicyClientModule(transport, interaction_type=InteractionType.RANDOM)
    assert deterministic(td.clone())["action"].item() == 1.0
    assert random(td.clone())["action"].item() == 0.0
    caller = PolicyClientModule(transport)
    from tensordict.nn import set_interaction_type

    with set_interaction_type(InteractionType.DETERMINISTIC):
        out = caller(td.clone())
    assert out["action"].item() == 1.0 and "_tdrl_interaction_type" not in out.keys()


def test_mixed_interaction_types_in_one_batch(server_factory):
    probe = TensorDictModule(ModeProbe(), in_keys=["observation"], out_keys=["action"])
    transport = ThreadingTransport()
    modes = [InteractionType.DETERMINISTIC, InteractionType.RANDOM] * 3
    modules = [PolicyClientModule(transport, interaction_type=m) for m in modes]
    futures = [m.submit(TensorDict({"observation": torch.zeros(3)})) for m in modules]  # queued before start
    server = server_factory(probe, transport, max_batch_size=8)
    got = [f.result(timeout=WAIT)["action"].item() for f in futures]
    assert got == [1.0, 0.0] * 3
    assert server.stats()["batches"] == 1


def test_max_inflight_bounds_unanswered_requests():
    transport = ThreadingTransport()
    module = PolicyClientModule(transport, max_inflight=1)
    first = module.submit(TensorDict({"observation": torch.zeros(3)}))
    blocked = threading.Thread(target=module.submit, args=(TensorDict({"observation": torch.zeros(3)}),),
                               daemon=True)
    blocked.start()
    blocked.join(timeout=0.3)
    assert blocked.is_alive()  # waiting for a free slot
    with InferenceServer(make_policy(), transport):
        first.result(timeout=WAIT)
        blocked.join(timeout=WAIT)
    assert not blocked.is_alive()
    with pytest.raises(ValueError, match="max_inflight must be at least 1"):
        PolicyClientModule(transport, max_inflight=0)


def test_configs_and_bad_arguments():
    server = InferenceServer(make_policy(), server_config=InferenceServerConfig(max_batch_size=8, timeout=0.001),
                             device_config=InferenceDeviceConfig(policy_device="cpu", env_device="cpu"))
    assert (server.max_batch_size, server.timeout, server.policy_device, server.output_device) == (
        8, 0.001, torch.device("cpu"), torch.device("cpu"))
    assert server.transport_kind == "thread" and server.service_backend == "thread"
    with pytest.raises(ValueError, match="mutually exclusive"):
        InferenceServer(make_policy(), server_config=InferenceServerConfig(), max_batch_size=4)
    with pytest.raises(ValueError, match="storing_device is a collector setting"):
        InferenceServer(make_policy(), device_config=InferenceDeviceConfig(storing_device="cpu"))
    with pytest.raises(ValueError, match="transport='shared_memory' is not available"):
        InferenceServer(make_policy(), "shared_memory")
    with pytest.raises(ValueError, match="service_backend='process'"):
        InferenceServer(policy_factory=make_policy, service_backend="process")
    with pytest.raises(ValueError, match="exactly one of model and policy_factory"):
        InferenceServer()
    with pytest.raises(ValueError, match="min_batch_size .* exceeds max_batch_size"):
        InferenceServerConfig(max_batch_size=2, min_batch_size=4)
    with pytest.raises(ValueError, match="service_backend must be"):
        InferenceServerConfig(service_backend="gpu")  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="transport.client"):
        MPTransport().submit(TensorDict())
    assert InferenceServer(policy_factory=make_policy).clients(3).__len__() == 3

