"""The commands that draw; matplotlib is imported only to draw.

- `attention`: `keras-bert attention`, a model's attention on a text as heat maps;
- `plot`: `keras-bert plot`, the training curves of a run.
"""
