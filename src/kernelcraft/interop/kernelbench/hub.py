"""KernelBench level 4 without the Hugging Face hub: configs from transformers itself, random weights.

Level 4 problems call ``AutoConfig.from_pretrained(name)`` at module level and
``AutoModelForCausalLM.from_pretrained(name, config=config)`` in ``Model.__init__``. Nothing here may
reach the hub (this workplace's machines cannot), so inside :func:`offline_hub`:

- ``AutoConfig.from_pretrained(name)`` reads ``config.json`` from a folder the user gives
  (``KERNELCRAFT_HF_CONFIGS=DIR`` holding ``DIR/<org>--<model>/config.json``), else uses the defaults of
  the transformers config class whose own documentation names this checkpoint as its defaults
  (``GPT2Config`` for ``gpt2``, ``BartConfig`` for ``facebook/bart-large``, ``BigBirdConfig`` for
  ``google/bigbird-roberta-base``, ``ElectraConfig`` for ``google/electra-small-discriminator``: the
  ``[name](https://huggingface.co/name)`` link in the class docstring, checked at run time so a
  transformers release that changes its defaults is not silently trusted); any other name is an error
  that says which file to provide;
- ``AutoModel*.from_pretrained(name, config=...)`` becomes ``from_config(config)`` in eval mode (as
  ``from_pretrained`` returns it): the architecture of the checkpoint with weights drawn under the
  caller's seed. The task README says the weights are random.

The generated reference, baseline and input generator of such a task run the problem under this too.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

CONFIG_DIR_ENV = "KERNELCRAFT_HF_CONFIGS"
_DEFAULT_CLASSES = ("GPT2Config", "BartConfig", "BigBirdConfig", "ElectraConfig")
_ALIASES = {"gpt2": "openai-community/gpt2"}


class HubUnavailable(OSError):
    """A config the problem asks for that neither a local file nor transformers' defaults give."""


def uses_hub(source: str) -> bool:
    return "from_pretrained" in source and "transformers" in source


def _documented_defaults(name: str):
    import transformers

    name = _ALIASES.get(name, name)
    for cls_name in _DEFAULT_CLASSES:
        cls = getattr(transformers, cls_name, None)
        if cls is not None and name in re.findall(r"\[([\w./-]+)\]\(https://huggingface\.co/", cls.__doc__ or ""):
            return cls
    return None


def load_config(name: str):
    """The config of checkpoint ``name`` without the hub (see the module docstring)."""
    import transformers

    folder = os.environ.get(CONFIG_DIR_ENV)
    if folder:
        local = Path(folder) / name.replace("/", "--")
        if (local / "config.json").is_file():
            data = json.loads((local / "config.json").read_text())
            return transformers.AutoConfig.for_model(data.pop("model_type"), **data)
    cls = _documented_defaults(name)
    if cls is not None:
        return cls()
    raise HubUnavailable(
        f"no hub here for the transformers config of {name!r}: put its config.json at "
        f"$KERNELCRAFT_HF_CONFIGS/{name.replace('/', '--')}/config.json (transformers' own defaults cover gpt2, "
        "facebook/bart-large, google/bigbird-roberta-base and google/electra-small-discriminator only)")


@contextmanager
def offline_hub() -> Iterator[None]:
    """``from_pretrained`` of configs and models without the hub, for the duration of the block."""
    import transformers

    patched = []

    def config_from_pretrained(name, *args, **kwargs):
        return load_config(str(name))

    patched.append((transformers.AutoConfig, "from_pretrained", transformers.AutoConfig.__dict__["from_pretrained"]))
    transformers.AutoConfig.from_pretrained = staticmethod(config_from_pretrained)
    for auto in [getattr(transformers, n) for n in dir(transformers) if n.startswith("AutoModel")]:
        if not isinstance(auto, type) or "from_pretrained" not in auto.__dict__ and not hasattr(auto, "from_config"):
            continue

        def model_from_pretrained(name, *args, _auto=auto, config=None, **kwargs):
            model = _auto.from_config(config if config is not None else load_config(str(name)))
            return model.eval()  # from_pretrained returns the model in eval mode

        patched.append((auto, "from_pretrained", auto.__dict__.get("from_pretrained")))
        auto.from_pretrained = staticmethod(model_from_pretrained)
    try:
        yield
    finally:
        for owner, attr, old in reversed(patched):
            if old is None:
                delattr(owner, attr)
            else:
                setattr(owner, attr, old)
