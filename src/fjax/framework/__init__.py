"""OneFlow's ``oneflow.framework`` paths that user code imports from: ``infer_compiler``
(``compile_from_torch``)."""
