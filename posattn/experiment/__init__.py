"The experiment platform (data, training, runs, sweeps, statistics, benchmarks): it needs the `experiments` extra."
import importlib.util as _util

_NEEDS = {'torchvision': 'torchvision', 'scipy': 'scipy', 'matplotlib': 'matplotlib', 'tqdm': 'tqdm',
          'papermill': 'papermill', 'wandb': 'wandb', 'sklearn': 'scikit-learn', 'submitit': 'submitit', 'PIL': 'pillow'}
_missing = [pkg for mod, pkg in _NEEDS.items() if _util.find_spec(mod) is None]
if _missing:
    raise ImportError(f"posattn.experiment needs the experiments extra ({', '.join(_missing)} not installed): "
                      f"pip install 'posattn[experiments]' (or, from a checkout, make setup)")
