"""Model-file runtimes: a trained model saved in a known format (scikit-learn, XGBoost, LightGBM,
ONNX) is served with no code, over V2 (and KServe's V1, as every model is). Each format has its own
module, importing its library only when a model of that format is served; `formats` tells them apart
by file name and `loader` is the dialect that serves them."""
