"""`python -m keras_bert` runs the `keras-bert` command."""

import sys

from keras_bert.cli import main

sys.exit(main())
