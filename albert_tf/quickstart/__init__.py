"""The quickstart (`albert-quickstart`, README command 1): pretraining, fine-tuning, export and serving of a small
ALBERT on text every CPython ships, in minutes on a CPU.

- `run`: the command (`main`) and its library call (`run_quickstart`).
- `corpus`: the text (pydoc topics and standard-library docstrings), written as pretraining input.
- `task`: the labelled task built from the same corpus (GLUE TSV layout).
- `finetune`: fine-tuning through the GLUE task's library call, and serving the export.
- `report`, `plots`: what the quickstart prints and draws.
"""
