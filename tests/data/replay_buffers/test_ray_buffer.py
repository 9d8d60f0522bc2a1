from __future__ import annotations

import pickle
import socket

import pytest
import torch
from tensordict import TensorDict

from tdrl.data import LazyTensorStorage, RayReplayBuffer, RemoteTensorDictReplayBuffer

ray = pytest.importorskip("ray")


def test_a_bad_buffer_class_fails_before_ray_starts():
    with pytest.raises(TypeError, match="replay_buffer_cls must be a ReplayBuffer subclass"):
        RayReplayBuffer(replay_buffer_cls=dict)
    assert not ray.is_initialized()


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_ray_buffer_round_trip_state_and_lifecycle():
    rb = RayReplayBuffer(storage=LazyTensorStorage(16), batch_size=4,
                         ray_init_config={"num_cpus": 1, "include_dashboard": False, "log_to_driver": False})
    try:
        assert rb.service_backend == "ray" and rb.is_alive
        rb.extend(TensorDict({"x": torch.arange(10)}, [10]))
        client = pickle.loads(pickle.dumps(rb.client()))  # what a remote writer receives
        client.extend(TensorDict({"x": torch.arange(10, 12)}, [2]))
        assert len(rb) == 12 and rb.write_count == 12 and rb.batch_size == 4
        assert rb.sample().shape == torch.Size([4])
        state = rb.state_dict()
        rb.empty()
        assert len(rb) == 0
        rb.load_state_dict(state)
        assert sorted(rb[torch.arange(12)]["x"].tolist()) == list(range(12))
        with pytest.raises(TypeError, match="send buffer.client"):
            pickle.dumps(rb)
    finally:
        rb.close()
    rb.close()  # idempotent
    assert not rb.is_alive and not ray.is_initialized()  # the buffer started Ray, so it stopped it


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_remote_tensordict_buffer_over_torch_rpc(monkeypatch):
    rpc = pytest.importorskip("torch.distributed.rpc")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", str(port))
    rpc.init_rpc("owner", rank=0, world_size=1)
    try:
        rref = rpc.remote("owner", RemoteTensorDictReplayBuffer, kwargs={"storage": LazyTensorStorage(8),
                                                                         "batch_size": 2})
        assert rref.rpc_sync().extend(TensorDict({"x": torch.arange(5)}, [5])).tolist() == [0, 1, 2, 3, 4]
        assert rref.rpc_sync().sample().shape == torch.Size([2])
        assert rref.rpc_sync().__len__() == 5
    finally:
        rpc.shutdown()
