"""Seeding chains: a seed gives the same env states as TorchRL 0.14.1 (values printed by TorchRL)."""

import math

from tdrl.envs import GymEnv, SerialEnv

env = GymEnv("Pendulum-v1")
next_seed = env.set_seed(0)
assert isinstance(next_seed, int)
first = float(env.reset()["observation"].sum())
assert math.isclose(first, -2.1886, abs_tol=1e-3), (
    first
)  # gymnasium's reset(seed=0) stream, in both libraries

# the next seed of the chain (TorchRL's seed_generator) and, through it, the seeds of batched sub-envs
assert next_seed == 795726461, next_seed
env = SerialEnv(3, lambda: GymEnv("Pendulum-v1"))
env.set_seed(0)
sums = env.reset()["observation"].sum(-1).tolist()
expected = [-2.1886, 0.36748, -1.31723]
assert all(math.isclose(a, b, abs_tol=1e-3) for a, b in zip(sums, expected)), sums
env.close()
print("OK seeding")
