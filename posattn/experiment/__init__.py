"The experiment platform (data, training, runs, sweeps, statistics, benchmarks): it needs the `experiments` extra."
import importlib.util as _util

# What the modules import when they are imported. The extra's other members are imported where they are used (wandb
# by the W&B logger, submitit by `cluster`, papermill by the command lines), so a machine with torch and the
# scientific stack, such as a lent GPU, runs the training and the benchmarks without them.
_NEEDS = {'torchvision': 'torchvision', 'scipy': 'scipy', 'matplotlib': 'matplotlib', 'tqdm': 'tqdm',
          'sklearn': 'scikit-learn', 'PIL': 'pillow'}
_missing = [pkg for mod, pkg in _NEEDS.items() if _util.find_spec(mod) is None]
if _missing:
    raise ImportError(f"posattn.experiment needs the experiments extra ({', '.join(_missing)} not installed): "
                      f"pip install '.[experiments]' in a posattn checkout (or make setup there)")
