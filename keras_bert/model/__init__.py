"""The network (Keras 3 layers and ops, on every Keras 3 backend):

- `config`: `BertConfig`, presets and config files (keras_bert, Google, Hugging Face);
- `layers`: embeddings, self-attention, the transformer block, the pooler and heads;
- `encoder`: `BertEncoder`, the functional encoder with TF Hub input/output names;
- `models`: `BertTask`, the task models' text-free base (encoder + heads, config,
  dtype policy, default loss and metrics, quantize/LoRA), and `BertPretrainer`; the
  fine-tuning task models and their raw-text face are the tasks stage's
  (`keras_bert.tasks.task_model` and each family's `model` module);
- `adaptation`: `quantize` and `enable_lora` of a task model, and the retracing they
  need;
- `saving`: `save` and `save_weights` of the encoder and the task models, written
  beside the target and renamed into place (an interrupted save keeps the old file);
- `losses`: the pretraining objective with global averages;
- `tf_fast`: the TensorFlow backend's fast paths (MatMul + BiasAdd rows, fusable GELU,
  16-bit dropout masks, the compiled eager call), the one place the model stage uses
  TensorFlow; on JAX and PyTorch the layers run their `keras.ops` form;
- `options`: `EncodeOptions`, what `keras-bert encode` asks of an encoder, declared once.

Each class registers with Keras when it is defined (see the package facade for when
`import keras_bert` imports them).
"""
