"""predict answers each row doubled, with the number of rows its call had in the last column."""

import numpy as np
from seldon_core.user_model import SeldonResponse


class Batchy:
    def predict(self, X, names, meta=None):
        rows = np.full((len(X), 1), len(X))
        answer = np.hstack([X * 2, rows])
        if (X == 7).any():
            return SeldonResponse(
                answer, tags={"seven": True}, metrics=[{"type": "COUNTER", "key": "sevens", "value": 1}]
            )
        return answer
