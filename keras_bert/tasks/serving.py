"""What the families' `serve_text` signatures share: the checks that turn the raw text
inputs into batches of strings (a bad rank or batch size is INVALID_ARGUMENT naming the
input). Each family's folder holds its own `serving` (SavedModel) and `litert_serving`
(LiteRT) code; `keras_bert.export` builds the signatures around them."""

from __future__ import annotations

import functools

import tensorflow as tf


def string_batches(inputs: dict) -> dict:
    """The text inputs as [batch] vectors of strings; another rank, or a `text_pair`
    with another number of strings than `text`, is INVALID_ARGUMENT naming the input."""
    checks = [tf.debugging.assert_equal(tf.rank(value), 1, message=(
        f"{name} must be a 1-D batch of strings, shape [batch]"))
        for name, value in sorted(inputs.items())]
    if "text_pair" in inputs:
        checks.append(tf.debugging.assert_equal(
            tf.size(inputs["text"]), tf.size(inputs["text_pair"]),
            message="text_pair must hold one string per text"))
    with tf.control_dependencies(checks):
        return {name: tf.reshape(value, [-1]) for name, value in inputs.items()}


def choice_string_batches(inputs: dict) -> dict:
    """Multiple choice's text inputs: `text` and `text_pair` as [batch] vectors (as
    `string_batches` checks them) and `endings` as a [batch, endings] matrix with at
    least one column; another rank, batch size or no column is INVALID_ARGUMENT
    naming the input."""
    endings = inputs["endings"]
    strings = string_batches({k: v for k, v in inputs.items() if k != "endings"})
    shape = tf.shape(endings)
    checks = [tf.debugging.assert_equal(tf.rank(endings), 2, message=(
        "endings must be a 2-D batch of strings, shape [batch, endings]"))]
    with tf.control_dependencies(checks):  # the shape is read only once the rank is 2
        checks = [
            tf.debugging.assert_equal(shape[0], tf.size(strings["text"]), message=(
                "endings must hold one row of endings per text")),
            tf.debugging.assert_positive(shape[-1], message=(
                "endings must hold at least one ending per text (\"\" for none)")),
        ]
    with tf.control_dependencies(checks):
        strings["endings"] = tf.reshape(endings, [-1, shape[-1]])
    return strings


@functools.cache
def whitespace_code_points() -> tuple[int, ...]:
    """The code points Python's `str.split()` splits at (`str.isspace()`), as this
    Python's Unicode version defines them.

    Example:

    >>> [hex(c) for c in whitespace_code_points()[:6]]
    ['0x9', '0xa', '0xb', '0xc', '0xd', '0x1c']
    """
    return tuple(c for c in range(0x110000) if chr(c).isspace())
