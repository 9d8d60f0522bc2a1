"""tdrl.modules.inference_server: batched policy inference for many env workers (TorchRL's names)."""

from tdrl.modules.inference_server._client import PolicyClientModule
from tdrl.modules.inference_server._config import InferenceDeviceConfig, InferenceServerConfig
from tdrl.modules.inference_server._mp import MPTransport
from tdrl.modules.inference_server._server import InferenceClient, InferenceServer
from tdrl.modules.inference_server._threading import ThreadingTransport
from tdrl.modules.inference_server._transport import InferenceTransport

__all__ = [
    "InferenceClient",
    "InferenceDeviceConfig",
    "InferenceServer",
    "InferenceServerConfig",
    "InferenceTransport",
    "MPTransport",
    "PolicyClientModule",
    "ThreadingTransport",
]
