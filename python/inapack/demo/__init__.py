"""make train-demo: data-parallel training of a small MLP on scikit-learn's digits through the
switch (train.py, one process per worker) beside an exact local all-reduce, and the comparison and
plot (report.py). Needs the demo extras: pip install './python[demo]'."""
