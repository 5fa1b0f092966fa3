"""scikit-learn: a logistic regression cross-validated on the iris data set (CSV files in
sklearn.datasets.data) with n_jobs=2, so that joblib fits the folds in loky worker processes
started from the executable; each fitted estimator says in which process it was fitted."""

import json
import os

from sklearn.linear_model import LogisticRegression


class TracedLogisticRegression(LogisticRegression):
    """LogisticRegression that records the pid of the process that fitted it."""

    def fit(self, X, y, **options):
        self.fitted_in_ = os.getpid()
        return super().fit(X, y, **options)


def main():
    import joblib
    import numpy
    import scipy
    import sklearn
    import threadpoolctl
    from sklearn.datasets import load_iris
    from sklearn.model_selection import cross_validate

    iris = load_iris()
    folds = cross_validate(TracedLogisticRegression(max_iter=200), iris.data, iris.target, cv=3,
                           n_jobs=2, return_estimator=True)
    fitted_in = {estimator.fitted_in_ for estimator in folds["estimator"]}
    print(json.dumps({
        "scores": [round(float(score), 6) for score in folds["test_score"]],
        "shape": list(iris.data.shape),
        "classes": [str(name) for name in iris.target_names],
        "descr": iris.DESCR.splitlines()[0],
        "fitted_in_workers": os.getpid() not in fitted_in,
        "workers": len(fitted_in),
        "backend": type(joblib.parallel.get_active_backend()[0]).__name__,
        "versions": [sklearn.__version__, numpy.__version__, scipy.__version__,
                     joblib.__version__, threadpoolctl.__version__],
        "sklearn": sklearn.__file__,
    }))
