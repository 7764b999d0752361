"""Seldon Core v1's wire format, shared by the Seldon and graph dialects: the SeldonMessage codec
(`payload`, with TensorFlow's TensorProto in `tftensor`), Seldon's error body and status codes
(`errors`), the generated gRPC code of ``seldon.protos`` (`_generated`, from `proto/`), and what every
Seldon REST or gRPC server answers the same way (`rest`, `grpc`)."""
