"""Packaging for keras_bert: BERT for TensorFlow/Keras."""

from setuptools import find_packages, setup

CORE = [
    # TensorFlow 2.20 or 2.21 with its own tensorflow-text (each release pins its TF
    # minor); a fresh install gets 2.21, the `official` extra (tf-models-official, whose
    # newest release pins TF 2.20) resolves 2.20.
    "tensorflow>=2.20,<2.22",
    "tensorflow-text>=2.20,<2.22",
    # tf.summary (training logs) needs TensorBoard, which TensorFlow 2.21 no longer
    # installs with itself.
    "tensorboard>=2.20,<2.22",
    "keras>=3.10,<3.16",
    "numpy",
    "safetensors",
    "tqdm",
]

EXTRAS = {
    # Test runner and linters; everything the default test suite needs (the export
    # tests read TF Serving warmup protos and load exports with hub.KerasLayer; the
    # plotting tests draw with matplotlib; pytest-xdist runs the suite on two workers;
    # the LiteRT tests run ai-edge-litert's interpreter beside TensorFlow's; keras-hub is
    # the reference for its presets, huggingface_hub reads hf:// names from its cache).
    "test": ["pytest", "pytest-xdist", "ruff", "tensorflow-serving-api>=2.20,<2.22", "tensorflow-hub>=0.16.1",
             "tf-keras>=2.20,<2.22", "matplotlib", "tf2onnx~=1.17", "onnxruntime>=1.20",
             "ai-edge-litert", "keras-hub", "huggingface_hub",
             # tensorflow-hub imports pkg_resources, which setuptools 81 removed (torch,
             # for one, pulls in the newest setuptools).
             "setuptools<81"],
    # SavedModel export: TF Serving warmup requests (PredictionLog protos).
    "export": ["tensorflow-serving-api>=2.20,<2.22"],
    # ONNX export of the ids signature (`keras-bert export --format onnx`) and ONNX
    # Runtime to run it; tf2onnx 1.17 installs beside TensorFlow 2.20 without changing it.
    "onnx": ["tf2onnx~=1.17", "onnx>=1.17", "onnxruntime>=1.20"],
    # LiteRT's own interpreter (`keras_bert.export.LiteRTModel` uses it when installed,
    # else TensorFlow's deprecated tf.lite one); tf-models-official also brings it.
    "litert": ["ai-edge-litert"],
    # Reusing exported encoders with hub.KerasLayer (a tf_keras, i.e. Keras 2, layer).
    "hub": ["tensorflow-hub>=0.16.1", "tf-keras>=2.20,<2.22"],
    # Vector search for `keras-bert search --index_kind faiss_flat|faiss_hnsw`
    # (benchmarks/vector_search.py); the default exact search needs numpy only.
    "search": ["faiss-cpu>=1.8"],
    # Attention heat maps and training curves (keras_bert.plotting; attention and plot).
    "plot": ["matplotlib"],
    # Everything `keras-bert demo` shows: its pictures and the export's warmup file.
    "demo": ["matplotlib", "tensorflow-serving-api>=2.20,<2.22"],
    # TF2 reference implementation: interop and parity tests.
    "official": ["tf-models-official~=2.20.0"],
    # Hugging Face datasets/tokenizers for optional comparisons (no torch).
    "hf": ["tokenizers", "huggingface_hub"],
    # Peers measured side by side in benchmarks/.
    "bench": ["keras-hub", "tokenizers", "psutil"],
    # tensorflow-datasets imports importlib_resources to prepare datasets but does not
    # declare it.
    "datasets": ["tensorflow-datasets", "importlib_resources"],
    # Independent references that scripts/ regenerate tests/fixtures from (not needed by CI).
    "refs": ["bert-tensorflow==1.0.4", "tokenizers"],
    # create-pretraining-data on Apache Beam (`--runner beam`) and `encode --output_dir`
    # (Parquet through pyarrow, which apache-beam also needs): the DirectRunner here,
    # Dataflow, Flink or Spark at scale (keras_bert.data.beam, tasks/embedding/beam.py).
    "beam": ["apache-beam>=2.77,<3", "pyarrow"],
    # Other Keras 3 backends for the model stage (KERAS_BACKEND=jax / torch):
    # keras_bert.model and load_encoder of Hugging Face and keras_bert checkpoints run
    # there without TensorFlow (tests/model/test_backends.py; benchmarks/accelerator.py on JAX).
    # CPU builds; for a GPU install jax[cuda12] or torch's CUDA wheel instead.
    "jax": ["jax[cpu]"],
    "torch": ["torch"],
}

setup(
    name="keras_bert",
    version="0.1.0",
    description="BERT (Devlin et al., 2019) for TensorFlow/Keras: encoder, task heads, "
    "checkpoint import, tokenization, pretraining data and training.",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    python_requires=">=3.10",
    # The runnable jobs live in the top-level pipelines/ directory of the repository
    # (the layout the project fixes) but install as `keras_bert.pipelines`: a generic
    # top-level package named `pipelines` in site-packages would clash with other
    # distributions that ship one. Its rooms (plumbing/, demo/) install beneath it.
    packages=find_packages(include=["keras_bert", "keras_bert.*"])
    + ["keras_bert.pipelines"]
    + [f"keras_bert.pipelines.{p}" for p in find_packages("pipelines")],
    package_dir={"keras_bert.pipelines": "pipelines"},
    include_package_data=True,
    install_requires=CORE,
    extras_require=EXTRAS,
    entry_points={"console_scripts": ["keras-bert=keras_bert.cli:entry_point"]},
)
