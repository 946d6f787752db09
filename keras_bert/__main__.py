"""`python -m keras_bert` runs the `keras-bert` command."""

import sys

from keras_bert.cli import entry_point

sys.exit(entry_point())
