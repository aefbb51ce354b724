"""What test_opinfo.py needs to know about fjax beyond "same name, same numbers".

Keys are OpInfo ids: ``name`` or ``name-variant_test_name`` (e.g. ``div-trunc_rounding``).
"""

from __future__ import annotations

# (a) fjax's name for an OpInfo, where the name-based lookup (fjax.<name>, fjax.<dotted.name>,
# fjax.nn.functional.<name>, then the Tensor method) would not find it. Value: a dotted path
# under fjax, or "Tensor.<method>".
NAME_MAP: dict[str, str] = {}

# OpInfos whose values cannot match torch's by construction: random draws (torch's and fjax's
# generators differ) and uninitialized memory. Only output structure, shapes and dtypes are
# compared; gradients are not.
SHAPE_ONLY: dict[str, str] = {
    **{
        name: "random draws: fjax's generator differs from torch's"
        for name in (
            "bernoulli",
            "cauchy",
            "exponential",
            "geometric",
            "log_normal",
            "multinomial",
            "normal",
            "normal-in_place",
            "normal-number_mean",
            "rand_like",
            "randint",
            "randint_like",
            "randn",
            "randn_like",
            "uniform",
            "nn.functional.dropout",
            "nn.functional.dropout2d",
            "nn.functional.dropout3d",
            "nn.functional.alpha_dropout",
            "nn.functional.feature_alpha_dropout-with_train",
            "nn.functional.fractional_max_pool2d",
            "nn.functional.fractional_max_pool3d",
            "nn.functional.rrelu",
        )
    },
    **{
        name: "uninitialized memory: only shape and dtype are defined"
        for name in ("empty", "empty_like", "empty_permuted", "empty_strided", "new_empty", "new_empty_strided")
    },
}

# Per-OpInfo tolerances where fjax legitimately differs from torch by more than torch.testing's
# defaults (float32: rtol=1.3e-6, atol=1e-5). Keys: rtol/atol (forward), grad_rtol/grad_atol.
# Every entry says why.
TOLERANCES: dict[str, dict] = {
    # sums of products over a batch/kernel axis: XLA and MKL/oneDNN accumulate in different orders
    "addbmm": dict(rtol=1e-5, atol=1e-4),
    "nn.functional.conv_transpose3d": dict(rtol=1e-5, atol=1e-4, grad_rtol=1e-5, grad_atol=1e-4),
    # d/dx at |x| -> 1 is ~1/(1-x^2): the float32 rounding of (1-x^2) differs by a few ulps
    "asin": dict(grad_rtol=1e-5, grad_atol=1e-5),
    "atanh": dict(grad_rtol=1e-5, grad_atol=1e-5),
    "erfinv": dict(grad_rtol=1e-5, grad_atol=1e-5),
    # a 1-element normalization: the input gradient is 0 in exact arithmetic; torch's rounding
    # residue is amplified by 1/sqrt(eps) ~ 316 to ~2e-4
    "nn.functional.layer_norm": dict(grad_rtol=1.3e-6, grad_atol=1e-3),
    # least squares via different factorizations (XLA's QR/SVD vs LAPACK gelsy): the gradient of
    # a moderately conditioned problem differs by ~3e-5
    "linalg.lstsq": dict(grad_rtol=1e-5, grad_atol=1e-4),
    "linalg.lstsq-grad_oriented": dict(grad_rtol=1e-5, grad_atol=1e-4),
    # the pseudo-inverse of a Hermitian input through its eigendecomposition: a few gradient
    # entries of a moderately conditioned batch differ by ~1.6e-5
    "linalg.pinv-hermitian": dict(grad_rtol=1e-5, grad_atol=5e-5),
    # a sample of all-1e4 inputs: exp(x - out) in float32 carries ~1e-3 relative error at that
    # magnitude; torch's gradient is ~1% off the float64 value there, fjax's is closer
    "logcumsumexp": dict(grad_rtol=2e-2, grad_atol=1e-5),
    # polygamma(n + 1, x) near the poles at negative x: torch's and fjax's float32 series differ by
    # ~3e-5 relative where the values are ~1e4
    "special.polygamma-special_polygamma_n_0": dict(grad_rtol=1e-4, grad_atol=1e-5),
    # exp of a matrix with entries ~9: values span 1e-1..1e5; torch's float32 Taylor/squaring result is
    # itself ~5e-2 (absolute, ~5e-7 of the norm) from the exact one, which fjax computes (float64 Pade)
    "matrix_exp": dict(rtol=1e-5, atol=5e-2, grad_rtol=1e-5, grad_atol=5e-2),
}

# OpInfos this harness cannot compare at all (they are excluded from the pass rate; the report
# lists them): the sample's meaning depends on something the numpy conversion does not carry.
HARNESS_LIMITS: dict[str, str] = {
    # as_strided of a *view* indexes the base tensor's storage from the view's storage_offset;
    # the conversion copies the view into a fresh contiguous array, so the storage differs
    "as_strided-partial_views": "as_strided on a view reads the base's storage, which conversion does not carry",
}

# The Tensor-method variant (x.op(...)) is checked forward-only next to the function variant;
# entries here skip that check only.
METHOD_UNSUPPORTED: dict[str, str] = {
    "flip": "x.flip(dims=...) raises TypeError: the method takes the dims only positionally",
    "hsplit": "no Tensor.hsplit (fjax.hsplit exists)",
    "vsplit": "no Tensor.vsplit (fjax.vsplit exists)",
    "dsplit": "no Tensor.dsplit (fjax.dsplit exists)",
    "bernoulli": "no Tensor.bernoulli (fjax.bernoulli exists)",
    "frexp": "no Tensor.frexp (fjax.frexp exists; torch's method signature differs)",
    "put": "no Tensor.put (fjax.put exists; torch's method signature differs)",
    "unsafe_split": "no Tensor.unsafe_split (fjax.unsafe_split exists; torch's method signature differs)",
    "narrow_copy": "no Tensor.narrow_copy (fjax.narrow_copy exists; torch's method signature differs)",
    "masked_scatter": "no Tensor.masked_scatter (fjax.masked_scatter exists; torch's method signature differs)",
    "cholesky_solve": "no Tensor.cholesky_solve (fjax.cholesky_solve exists; torch's method signature differs)",
}

# OpInfos the pytest module skips, with the reason. Every OpInfo not listed is a real test that
# must pass; when fjax gains an op or a fix, delete its line here (the report ignores this dict:
# `python tests/oracle/test_opinfo.py --report --emit-skips` prints the current failures).
# Sections: defects first (silent wrong results, raw JAX errors, valid inputs fjax rejects), then
# explicit NotImplementedError, then missing counterparts by namespace, then argument values.
UNSUPPORTED: dict[str, str] = {
    # --- DEFECT, silent wrong forward value ---
    "special.polygamma-special_polygamma_n_0": "forward mismatch: special.polygamma(2, x) at negative x is 8x off",
    **{
        f"polygamma-polygamma_n_{n}": "forward mismatch: polygamma(n, x) at negative x (special.polygamma's defect)"
        for n in range(5)
    },
    # --- DEFECT, silent wrong gradient ---
    "digamma": "gradient mismatch: d/dx digamma is JAX's polygamma(1, x), wrong at negative x (7.74 vs 9.80 at -8.48)",
    # backward of a complex output takes Re(J^T g) where torch takes Re(J^H g) (the cotangent's
    # conjugate): every real -> complex op is affected, e.g. x * (1+2j) with g = 1+1j gives -1, torch 3
    **{
        name: "gradient mismatch: complex-output backward uses J^T g, torch J^H g (conjugate cotangent)"
        for name in (
            "fft.fft",
            "fft.fft2",
            "fft.fftn",
            "fft.rfft",
            "fft.rfft2",
            "fft.rfftn",
            "fft.ifft",
            "fft.ifft2",
            "fft.ifftn",
            "fft.ihfft",
            "fft.ihfft2",
            "fft.ihfftn",
        )
    },
    "linalg.norm-subgradients_at_zero": "gradient mismatch: the vector norm at x = 0 has a NaN gradient; torch's is 0",
    # --- DEFECT, raw JAX error instead of a result or an fjax error ---
    "linspace-tensor_overload": "raw JAX TypeError: 0-dim Tensor start/end reach JAX unconverted",
    "logspace-tensor_overload": "raw JAX TypeError: 0-dim Tensor start/end reach JAX unconverted",
    "nn.functional.unfold": "raw JAX ZeroDivisionError (integer modulo by zero) for an empty batch (0, 1, 5, 5)",
    # --- DEFECT, fjax rejects an input torch accepts ---
    "nn.functional.cosine_similarity": "OpError for 0-dim inputs",
    "nn.functional.batch_norm": "OpError for a 1-D empty input of shape (0,) in training mode",
    "tensor_split": "OpError for a Tensor `indices_or_sections` argument",
    "repeat_interleave": "OpError for a Tensor `repeats` argument",
    "gather": "OpError for an empty index of another rank (index (2, 0), input (5,))",
    "index_select": "OpError for a 0-dim input",
    "tensordot": "OpError contracting a size-1 dim against a size-2 dim (torch broadcasts it)",
    "linalg.det": "OpError for a 0x0 matrix",
    "linalg.inv_ex": "OpError for a 0x0 matrix",
    "take_along_dim": "IndexOutOfRange for negative indices, which torch wraps",
    "nextafter": "gradient mismatch: fjax.nextafter (added here) gives a zero gradient, torch's differs",
    "quantile": "shape mismatch: (1,) for a sample torch reduces to () (fjax.quantile, added here, needs the fix)",
    "nanquantile": "shape mismatch: (1,) for a sample torch reduces to () (fjax.nanquantile, added here)",
    # --- NotImplementedError naming the unsupported argument (the right way to refuse) ---
    "nn.functional.pad-replicate_negative": "NotImplementedError: negative pads in replicate mode",
    "nn.functional.scaled_dot_product_attention": "NotImplementedError: dropout_p > 0",
    "index_put": "NotImplementedError: boolean index tensors",
    "scatter_reduce-prod": "NotImplementedError (JAX): scatter_mul has no gradient for repeated indices",
    "index_reduce-prod": "NotImplementedError (JAX): scatter_mul has no gradient for repeated indices",
    # --- an unsupported argument raising TypeError instead of NotImplementedError ---
    "normal-number_mean": "TypeError: normal() got an unexpected keyword argument 'layout'",
    # --- no counterpart: torch.* functions and Tensor methods fjax lacks ---
    "cauchy": "no Tensor.cauchy_ (the OpInfo calls it)",
    "geometric": "no Tensor.geometric_ (the OpInfo calls it)",
    "log_normal": "no Tensor.log_normal_ (the OpInfo calls it)",
    "stft": "no fjax.stft / Tensor.stft",
    "geqrf": "no fjax.geqrf / Tensor.geqrf",
    "gradient": "no fjax.gradient",
    "lu_unpack": "no fjax.lu_unpack",
    "lu": "no fjax.lu / Tensor.lu",
    "lu_solve": "no fjax.lu_solve / Tensor.lu_solve",
    "as_strided_scatter": "no fjax.as_strided_scatter / Tensor.as_strided_scatter",
    "ormqr": "no fjax.ormqr / Tensor.ormqr",
    "__rdiv__": "no fjax.__rdiv__ / Tensor.__rdiv__",
    "svd_lowrank": "no fjax.svd_lowrank (the OpInfo calls it)",
    "pca_lowrank": "no fjax.pca_lowrank (the OpInfo calls it)",
    "chalf": "no Tensor.chalf (the OpInfo calls it)",
    "new_empty_strided": "no Tensor.new_empty_strided (the OpInfo calls it)",
    "empty_strided": "no fjax.empty_strided (the OpInfo calls it)",
    "empty_permuted": "no fjax.empty_permuted",
    "scalar_tensor": "no fjax.scalar_tensor",
    "histogram": "no fjax.histogram / Tensor.histogram",
    "histogramdd": "no fjax.histogramdd",
    "resize_": "no Tensor.resize_ (the OpInfo calls it)",
    "resize_as_": "no fjax.resize_as_ (the OpInfo calls it)",
    "zero_": "no fjax.zero_ (the OpInfo calls it)",
    "to_sparse": "no Tensor.to_sparse (the OpInfo calls it)",
    "nonzero_static": "no fjax.nonzero_static / Tensor.nonzero_static",
    "hash_tensor": "no fjax.hash_tensor / Tensor.hash_tensor",
    # --- no counterpart: the *_copy variants of view ops (torch.expand_copy, ...) ---
    "as_strided_copy": "no fjax.as_strided_copy",
    "view_copy": "no fjax.view_copy",
    # --- no counterpart: ATen-level / private ops torch exposes (native_*, _softmax_backward_data, slice, ...) ---
    "_softmax_backward_data": "no fjax._softmax_backward_data",
    "native_group_norm": "no fjax.native_group_norm",
    "native_layer_norm": "no fjax.native_layer_norm",
    "native_batch_norm": "no fjax.native_batch_norm",
    "_native_batch_norm_legit": "no fjax._native_batch_norm_legit",
    "_batch_norm_with_update": "no fjax._batch_norm_with_update",
    "constant_pad_nd": "no fjax.constant_pad_nd",
    "_upsample_bilinear2d_aa": "no fjax._upsample_bilinear2d_aa",
    "max_pool2d_with_indices_backward": "no fjax.nn.functional.max_pool2d_with_indices (the OpInfo calls it)",
    "torch.ops.aten._safe_softmax.default": "no fjax.torch.ops.aten._safe_softmax.default",
    "slice": "no fjax.slice",
    "_unsafe_masked_index": "no fjax._unsafe_masked_index",
    "_unsafe_masked_index_put_accumulate": "no fjax._unsafe_masked_index_put_accumulate",
    "_chunk_cat": "no fjax._chunk_cat",
    "native_dropout_backward": "no fjax.native_dropout_backward",
    "grid_sampler_2d": "no fjax.grid_sampler_2d",
    "grid_sampler_3d": "no fjax.grid_sampler_3d",
    "_segment_reduce-lengths": "no fjax._segment_reduce",
    "_segment_reduce-offsets": "no fjax._segment_reduce",
    # --- no counterpart: torch.nn.functional functions fjax.nn.functional lacks ---
    "nn.functional.linear_cross_entropy": "no fjax.nn.functional.linear_cross_entropy",
    "nn.functional.linear_cross_entropy-chunked": "no fjax.nn.functional.linear_cross_entropy",
    "nn.functional.linear_cross_entropy-chunked_none": "no fjax.nn.functional.linear_cross_entropy",
    "nn.functional.adaptive_max_pool3d": "no fjax.nn.functional.adaptive_max_pool3d",
    "nn.functional.local_response_norm": "no fjax.nn.functional.local_response_norm",
    "nn.functional.upsample_bilinear": "no fjax.nn.functional.upsample_bilinear",
    "nn.functional.upsample_nearest": "no fjax.nn.functional.upsample_nearest",
    "nn.functional.multi_margin_loss": "no fjax.nn.functional.multi_margin_loss",
    "nn.functional.multilabel_margin_loss": "no fjax.nn.functional.multilabel_margin_loss",
    "nn.functional.fractional_max_pool2d": "no fjax.nn.functional.fractional_max_pool2d (the OpInfo calls it)",
    "nn.functional.fractional_max_pool3d": "no fjax.nn.functional.fractional_max_pool3d (the OpInfo calls it)",
    "nn.functional.max_unpool1d": "no fjax.nn.functional.max_unpool1d",
    "nn.functional.max_unpool1d-grad": "no fjax.nn.functional.max_unpool1d",
    "nn.functional.max_unpool2d": "no fjax.nn.functional.max_unpool2d",
    "nn.functional.max_unpool2d-grad": "no fjax.nn.functional.max_unpool2d",
    "nn.functional.max_unpool3d": "no fjax.nn.functional.max_unpool3d",
    "nn.functional.max_unpool3d-grad": "no fjax.nn.functional.max_unpool3d",
    "nn.functional.embedding_bag": "no fjax.nn.functional.embedding_bag (the OpInfo calls it)",
    "nn.functional.multi_head_attention_forward": "no fjax.nn.functional.multi_head_attention_forward",
    "nn.functional.grid_sample": "no fjax.nn.functional.grid_sample",
    "nn.functional.ctc_loss": "no fjax.nn.functional.ctc_loss",
    "nn.functional.pdist": "no fjax.nn.functional.pdist",
    "nn.functional.channel_shuffle": "no fjax.nn.functional.channel_shuffle",
    # --- no counterpart: torch.linalg functions fjax.linalg lacks ---
    "linalg.householder_product": "no fjax.linalg.householder_product",
    "linalg.ldl_factor": "no fjax.linalg.ldl_factor",
    "linalg.ldl_factor_ex": "no fjax.linalg.ldl_factor_ex",
    "linalg.ldl_solve": "no fjax.linalg.ldl_solve",
    "linalg.lu_factor": "no fjax.linalg.lu_factor",
    "linalg.lu_factor_ex": "no fjax.linalg.lu_factor_ex",
    "linalg.lu": "no fjax.linalg.lu",
    "linalg.lu_solve": "no fjax.linalg.lu_solve",
    "linalg.solve_ex": "no fjax.linalg.solve_ex",
    "linalg.tensorinv": "no fjax.linalg.tensorinv",
    "linalg.tensorsolve": "no fjax.linalg.tensorsolve",
    # --- no counterpart: torch.special functions fjax.special lacks ---
    "special.airy_ai": "no fjax.special.airy_ai",
    "special.bessel_y0": "no fjax.special.bessel_y0",
    "special.bessel_y1": "no fjax.special.bessel_y1",
    "special.chebyshev_polynomial_t": "no fjax.special.chebyshev_polynomial_t",
    "special.chebyshev_polynomial_u": "no fjax.special.chebyshev_polynomial_u",
    "special.chebyshev_polynomial_v": "no fjax.special.chebyshev_polynomial_v",
    "special.chebyshev_polynomial_w": "no fjax.special.chebyshev_polynomial_w",
    "special.hermite_polynomial_h": "no fjax.special.hermite_polynomial_h",
    "special.hermite_polynomial_he": "no fjax.special.hermite_polynomial_he",
    "special.laguerre_polynomial_l": "no fjax.special.laguerre_polynomial_l",
    "special.legendre_polynomial_p": "no fjax.special.legendre_polynomial_p",
    "special.modified_bessel_k0": "no fjax.special.modified_bessel_k0",
    "special.modified_bessel_k1": "no fjax.special.modified_bessel_k1",
    "special.scaled_modified_bessel_k0": "no fjax.special.scaled_modified_bessel_k0",
    "special.scaled_modified_bessel_k1": "no fjax.special.scaled_modified_bessel_k1",
    "special.shifted_chebyshev_polynomial_t": "no fjax.special.shifted_chebyshev_polynomial_t",
    "special.shifted_chebyshev_polynomial_u": "no fjax.special.shifted_chebyshev_polynomial_u",
    "special.shifted_chebyshev_polynomial_v": "no fjax.special.shifted_chebyshev_polynomial_v",
    "special.shifted_chebyshev_polynomial_w": "no fjax.special.shifted_chebyshev_polynomial_w",
    # --- no counterpart: torch.signal.windows: no fjax.signal namespace ---
    "signal.windows.hamming": "no fjax.signal.windows.hamming",
    "signal.windows.hann": "no fjax.signal.windows.hann",
    "signal.windows.bartlett": "no fjax.signal.windows.bartlett",
    "signal.windows.blackman": "no fjax.signal.windows.blackman",
    "signal.windows.cosine": "no fjax.signal.windows.cosine",
    "signal.windows.exponential": "no fjax.signal.windows.exponential",
    "signal.windows.gaussian": "no fjax.signal.windows.gaussian",
    "signal.windows.kaiser": "no fjax.signal.windows.kaiser",
    "signal.windows.general_cosine": "no fjax.signal.windows.general_cosine",
    "signal.windows.general_hamming": "no fjax.signal.windows.general_hamming",
    "signal.windows.nuttall": "no fjax.signal.windows.nuttall",
    # --- no counterpart: torch.masked: no fjax.masked namespace ---
    **{
        name: "no fjax.masked namespace (torch.masked.* reductions with a mask argument)"
        for name in (
            "masked.sum",
            "masked.prod",
            "masked.cumsum",
            "masked.cumprod",
            "masked.amax",
            "masked.amin",
            "masked.argmax",
            "masked.argmin",
            "masked.mean",
            "masked.median",
            "masked.norm",
            "masked.var",
            "masked.std",
            "masked.softmax",
            "masked.log_softmax",
            "masked.softmin",
            "masked.normalize",
            "masked.logaddexp",
            "masked.logsumexp",
        )
    },
    # --- no counterpart for an argument value the samples pass ---
    "sparse.sampled_addmm": "torch.sparse_csr tensor inputs",
    "sparse.mm-reduce": "torch.sparse_csr tensor inputs",
    "nn.functional.triplet_margin_with_distance_loss": "no fjax counterpart for torch.nn.PairwiseDistance()",
    "to": "no memory_format preserve_format",
    "bfloat16": "no memory_format contiguous_format",
    "bool": "no memory_format contiguous_format",
    "double": "no memory_format contiguous_format",
    "float": "no memory_format contiguous_format",
    "half": "no memory_format contiguous_format",
    "int": "no memory_format contiguous_format",
    "long": "no memory_format contiguous_format",
    "byte": "no memory_format contiguous_format",
    "char": "no memory_format contiguous_format",
    "short": "no memory_format contiguous_format",
    "cdouble": "no memory_format contiguous_format",
    "cfloat": "no memory_format contiguous_format",
}
