"""The network (Keras 3 layers and ops, on every Keras 3 backend):

- `config`: `BertConfig`, presets and config files (keras_bert, Google, Hugging Face);
- `layers`: embeddings, self-attention, the transformer block, the pooler and heads;
- `encoder`: `BertEncoder`, the functional encoder with TF Hub input/output names;
- `models`: the task models on the encoder (pretraining, classification, spans,
  tokens, multiple choice, features);
- `taggers`: the tagging tasks' models, `BertNerTagger` (fine-tuned) and
  `BertFeatureBasedTagger` (frozen encoder, its last layers, a BiLSTM), with the loss
  and masked accuracy that skip unlabelled word pieces;
- `text_face`: what the task models add for raw text (`from_preset`, `fit`/`predict`
  on strings, `classify`/`answer`/`tag`/`choose`, `export`), implemented by later
  stages and wired in by the package facade;
- `adaptation`: `quantize` and `enable_lora` of a task model, and the retracing they
  need;
- `saving`: `save` and `save_weights` of the encoder and the task models, written
  beside the target and renamed into place (an interrupted save keeps the old file);
- `losses`: the pretraining objective with global averages;
- `tf_fast`: the TensorFlow backend's fast paths (MatMul + BiasAdd rows, fusable GELU,
  16-bit dropout masks, the compiled eager call), the one place the model stage uses
  TensorFlow; on JAX and PyTorch the layers run their `keras.ops` form;
- `options`: `EncodeOptions`, what `keras-bert encode` asks of an encoder, declared once.

Keras finds these classes in a `.keras` file once Keras and keras_bert are imported
(the facade registers them when Keras arrives).
"""
