"""KServe's V1 protocol (TensorFlow Serving's REST shape), served for every model beside V2."""
