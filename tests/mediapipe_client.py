"""MediaPipe Tasks as an app runs them: `TextClassifier` or `TextEmbedder` on raw strings, in an environment with
neither TensorFlow nor albert_tf (the test starts it with the MediaPipe venv's Python, `.ci/run`).

Usage: python mediapipe_client.py <classifier|embedder> <model.tflite>   (the texts: a JSON list on stdin)
Prints a JSON list: per text `{label: score}` (classifier, every label) or the embedding (embedder).
"""

import importlib.util
import json
import sys

from mediapipe.tasks import python as mp_python
from mediapipe.tasks.python import text as mp_text


def main(task, model_path):
    for package in ("tensorflow", "albert_tf"):
        if importlib.util.find_spec(package) is not None:
            raise SystemExit(f"the MediaPipe client must run without {package}: found it in {sys.executable}'s path")
    texts = json.load(sys.stdin)
    base = mp_python.BaseOptions(model_asset_path=model_path)
    results = []
    if task == "classifier":
        options = mp_text.TextClassifierOptions(base_options=base, max_results=-1)
        with mp_text.TextClassifier.create_from_options(options) as classifier:
            for text in texts:
                categories = classifier.classify(text).classifications[0].categories
                results.append({c.category_name: float(c.score) for c in categories})
    else:
        options = mp_text.TextEmbedderOptions(base_options=base)
        with mp_text.TextEmbedder.create_from_options(options) as embedder:
            for text in texts:
                results.append([float(v) for v in embedder.embed(text).embeddings[0].embedding])
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main(*sys.argv[1:])
