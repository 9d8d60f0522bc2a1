"""(j) Loggers: CSVLogger.log_scalar and log_hparams."""

import os
import tempfile

from tdrl.record import CSVLogger
from tdrl.record.loggers import generate_exp_name, get_logger

with tempfile.TemporaryDirectory() as tmp:
    exp_name = generate_exp_name("PPO", "pendulum")
    assert exp_name.startswith("PPO_pendulum")
    logger = CSVLogger(exp_name="my_exp", log_dir=tmp)
    for step in range(3):
        logger.log_scalar("reward", float(step) * 0.5, step=step)
        logger.log_scalar("loss", 1.0 / (step + 1), step=step)
    logger.log_hparams({"lr": 3e-4, "gamma": 0.99})
    path = os.path.join(tmp, "my_exp", "scalars", "reward.csv")
    assert os.path.exists(path), os.listdir(os.path.join(tmp, "my_exp"))
    with open(path) as f:
        lines = [ln for ln in f.read().splitlines() if ln.strip()]
    assert len(lines) == 3, lines
    assert lines[-1].split(",")[0].strip() == "2"
    assert float(lines[-1].split(",")[1]) == 1.0
    lg = get_logger("csv", logger_name=tmp, experiment_name="other")
    assert isinstance(lg, CSVLogger)
    lg.log_scalar("x", 1.0, step=0)
print("OK loggers")
