"""TensorDict modules: actors, value operators, Q-value selection, safe wrappers."""

from tdrl.modules.tensordict_module.actors import (
    Actor,
    ActorCriticOperator,
    ActorCriticWrapper,
    ActorValueOperator,
    LMHeadActorValueOperator,
    ProbabilisticActor,
    ValueOperator,
)
from tdrl.modules.tensordict_module.common import SafeModule
from tdrl.modules.tensordict_module.decision_transformer import DecisionTransformerInferenceWrapper
from tdrl.modules.tensordict_module.diffusion import DiffusionActor
from tdrl.modules.tensordict_module.dreamer_v3 import DreamerV3DiscreteActor, DreamerV3SeededPolicy
from tdrl.modules.tensordict_module.dropout import ConsistentDropout, ConsistentDropoutModule
from tdrl.modules.tensordict_module.exploration import (
    AdditiveGaussianModule,
    AdditiveGaussianWrapper,
    EGreedyModule,
    EGreedyWrapper,
    OrnsteinUhlenbeckProcessModule,
    OrnsteinUhlenbeckProcessWrapper,
    RandomPolicy,
    set_exploration_modules_spec_from_env,
)
from tdrl.modules.tensordict_module.multistep import MultiStepActorWrapper
from tdrl.modules.tensordict_module.probabilistic import (
    SafeProbabilisticModule,
    SafeProbabilisticTensorDictSequential,
)
from tdrl.modules.tensordict_module.qvalue import (
    DistributionalDQNnet,
    DistributionalQValueActor,
    DistributionalQValueHook,
    DistributionalQValueModule,
    QValueActor,
    QValueHook,
    QValueModule,
)
from tdrl.modules.tensordict_module.rnn import GRUModule, LSTMModule, recurrent_mode, set_recurrent_mode
from tdrl.modules.tensordict_module.rnn_cells import GRU, LSTM, GRUCell, LSTMCell
from tdrl.modules.tensordict_module.sequence import SafeSequential
from tdrl.modules.tensordict_module.tanh import TanhModule
from tdrl.modules.tensordict_module.vmap import VmapModule
from tdrl.modules.tensordict_module.world_models import WorldModel, WorldModelWrapper

__all__ = [
    "DiffusionActor",
    "DreamerV3DiscreteActor",
    "DreamerV3SeededPolicy",
    "WorldModel",
    "WorldModelWrapper",
    "DecisionTransformerInferenceWrapper",
    "AdditiveGaussianWrapper",
    "DistributionalQValueHook",
    "EGreedyWrapper",
    "MultiStepActorWrapper",
    "OrnsteinUhlenbeckProcessWrapper",
    "QValueHook",
    "ConsistentDropout",
    "ConsistentDropoutModule",
    "GRU",
    "GRUCell",
    "LSTM",
    "LSTMCell",
    "AdditiveGaussianModule",
    "EGreedyModule",
    "GRUModule",
    "LSTMModule",
    "OrnsteinUhlenbeckProcessModule",
    "RandomPolicy",
    "recurrent_mode",
    "set_exploration_modules_spec_from_env",
    "set_recurrent_mode",
    "Actor",
    "ActorCriticOperator",
    "ActorCriticWrapper",
    "ActorValueOperator",
    "LMHeadActorValueOperator",
    "DistributionalDQNnet",
    "DistributionalQValueActor",
    "DistributionalQValueModule",
    "ProbabilisticActor",
    "QValueActor",
    "QValueModule",
    "SafeModule",
    "SafeProbabilisticModule",
    "SafeProbabilisticTensorDictSequential",
    "SafeSequential",
    "TanhModule",
    "ValueOperator",
    "VmapModule",
]
