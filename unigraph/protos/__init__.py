"""Generated protobuf modules (make protos): the GraphSchema and tf.train.Example."""
