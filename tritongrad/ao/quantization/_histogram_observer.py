"""``HistogramObserver``: the running histogram of the observed values and PyTorch's L2
search for the range that quantizes it best (a part of ``observer``, which re-exports it).

The histogram is kept in float32 as PyTorch's: ``histc`` binning, the old histogram spread
over a wider range by upsampling (``repeat_interleave``, ``linspace``, ``bucketize`` and a
weighted ``bincount``), and the search's error terms, each step rounded as PyTorch's float32
tensors round it, so that ``calculate_qparams`` equals PyTorch's bit for bit.
"""

from __future__ import annotations

import warnings

import numpy as np

import tritongrad as tg

from .. import _qtensor as q
from .observer import _EPS, UniformQuantizationObserverBase, _buffer, _host, _is_per_tensor

__all__ = ["HistogramObserver"]

_f32 = np.float32


def _histc(x: np.ndarray, bins: int, lo, hi) -> np.ndarray:
    """``torch.histc`` of float32 ``x`` as PyTorch's CPU kernel computes it: bin
    ``int((x - lo) * bins / (hi - lo))`` in float32, the top edge in the last bin, values
    outside ``[lo, hi]`` dropped; an empty range is widened by 1 on both sides."""
    lo, hi = _f32(lo), _f32(hi)
    if lo == hi:
        lo, hi = lo - _f32(1), hi + _f32(1)
    x = x[(x >= lo) & (x <= hi)]
    pos = ((x - lo) * _f32(bins) / (hi - lo)).astype(_f32).astype(np.int64)
    pos[pos == bins] = bins - 1
    return np.bincount(pos, minlength=bins).astype(_f32)


def _linspace_f32(start, end, steps: int) -> np.ndarray:
    """``torch.linspace`` in float32 (PyTorch's CPU kernel: from the start for the first
    half, from the end for the second)."""
    start, end = _f32(start), _f32(end)
    step = _f32((end - start) / _f32(steps - 1)) if steps > 1 else _f32(0)
    i = np.arange(steps)
    half = steps // 2
    out = np.where(i < half, start + step * i.astype(_f32),
                   end - step * (steps - i - 1).astype(_f32))
    return out.astype(_f32)


class HistogramObserver(UniformQuantizationObserverBase):
    """The module records the running histogram of tensor values along with min/max values;
    ``calculate_qparams`` chooses the min and max that minimize the L2 error of quantizing the
    histogram (an approximate search that drops outlier bins from either end), then computes
    scale and zero point as :class:`MinMaxObserver`.

    Args:
        bins: Number of bins to use for the histogram (default 2048).
        dtype, qscheme, reduce_range, quant_min, quant_max, eps: as :class:`MinMaxObserver`.
    """

    def __init__(self, bins: int = 2048, dtype=q.quint8, qscheme=q.per_tensor_affine,
                 reduce_range=False, quant_min=None, quant_max=None, factory_kwargs=None,
                 eps=_EPS, is_dynamic=False, **kwargs):
        if not _is_per_tensor(qscheme):
            raise NotImplementedError("HistogramObserver's qscheme only support "
                                      "torch.per_tensor_symmetric and torch.per_tensor_affine.")
        if is_dynamic:
            raise NotImplementedError("HistogramObserver doesn't support dynamic quantization")
        super().__init__(dtype=dtype, qscheme=qscheme, reduce_range=reduce_range,
                         quant_min=quant_min, quant_max=quant_max,
                         factory_kwargs=factory_kwargs, eps=eps, is_dynamic=is_dynamic,
                         **kwargs)
        self.bins = bins
        self.register_buffer("histogram", tg.zeros(bins, device=self._device))
        self.register_buffer("min_val", tg.tensor(float("inf"), device=self._device))
        self.register_buffer("max_val", tg.tensor(float("-inf"), device=self._device))
        self.dst_nbins = 2 ** (8 * self.dtype.itemsize)
        self.upsample_rate = 16  # used to reduce quantization errors when upscaling histogram

    def _set(self, hist, mn, mx) -> None:
        dev = self.histogram.device
        self.histogram = _buffer(np.asarray(hist, _f32), dev)
        self.min_val = _buffer(np.asarray(mn, _f32), dev)
        self.max_val = _buffer(np.asarray(mx, _f32), dev)

    def _compute_quantization_error(self, hist: np.ndarray, mn: float, mx: float,
                                    next_start_bin: int, next_end_bin: int) -> float:
        """The L2 error of quantizing the histogram with ``[start_bin, end_bin]`` as the range
        (each source bin's density spread uniformly; float32 tensors as PyTorch's)."""
        bin_width = (mx - mn) / self.bins
        dst_bin_width = bin_width * (next_end_bin - next_start_bin + 1) / self.dst_nbins
        if dst_bin_width == 0.0:
            return 0.0
        bw, dw = _f32(bin_width), _f32(dst_bin_width)
        src_bin = np.arange(self.bins)
        begin = ((src_bin - next_start_bin).astype(_f32) * bw).astype(_f32)
        end = (begin + bw).astype(_f32)
        top = _f32(self.dst_nbins - 1)
        of_begin = np.clip(np.floor(begin / dw), _f32(0), top).astype(_f32)
        of_begin_center = ((of_begin + _f32(0.5)) * dw).astype(_f32)
        of_end = np.clip(np.floor(end / dw), _f32(0), top).astype(_f32)
        density = (hist / bw).astype(_f32)

        def norm_of(b, e, d):
            return (d * ((e * e * e - b * b * b) / _f32(3))).astype(_f32)
        half = _f32(dst_bin_width / 2)
        norm = np.zeros(self.bins, _f32)
        norm = norm + norm_of((begin - of_begin_center).astype(_f32), half, density)
        norm = norm + ((of_end - of_begin - _f32(1)) * norm_of(-half, half, density))
        of_end_center = (of_end * dw + half).astype(_f32)
        norm = norm + norm_of(-half, (end - of_end_center).astype(_f32), density)
        return float(np.sum(norm.astype(_f32), dtype=_f32))

    def _non_linear_param_search(self) -> tuple[np.float32, np.float32]:
        """An approximation for L2 error minimization for selecting min/max (filters out
        outliers in the input distribution)."""
        hist = _host(self.histogram).astype(_f32)
        mn, mx = _f32(_host(self.min_val)), _f32(_host(self.max_val))
        bin_width = _f32((mx - mn) / _f32(self.bins))
        total = float(np.sum(hist, dtype=_f32))
        csum = np.cumsum(hist, dtype=_f32)
        stepsize, alpha, beta = 1e-5, 0.0, 1.0
        start_bin, end_bin = 0, self.bins - 1
        norm_min = float("inf")
        while alpha < beta:
            next_alpha, next_beta = alpha + stepsize, beta - stepsize
            left, right = start_bin, end_bin
            while left < end_bin and csum[left] < next_alpha * total:
                left += 1
            while right > start_bin and csum[right] > next_beta * total:
                right -= 1
            next_start_bin, next_end_bin = start_bin, end_bin
            if (left - start_bin) > (end_bin - right):
                next_start_bin, alpha = left, next_alpha
            else:
                next_end_bin, beta = right, next_beta
            if next_start_bin == start_bin and next_end_bin == end_bin:
                continue
            norm = self._compute_quantization_error(hist, float(mn), float(mx),
                                                    next_start_bin, next_end_bin)
            if norm > norm_min:
                break
            norm_min, start_bin, end_bin = norm, next_start_bin, next_end_bin
        new_min = _f32(mn + bin_width * _f32(start_bin))
        new_max = _f32(mn + bin_width * _f32(end_bin + 1))
        return new_min, new_max

    def _upscale_histogram(self, hist, orig_min, orig_max, update_min, update_max):
        rate = self.upsample_rate
        hist = (np.repeat(hist, rate) / _f32(rate)).astype(_f32)
        bin_size = _f32((orig_max - orig_min) / _f32(self.bins * rate))
        mids = (_linspace_f32(orig_min, orig_max, self.bins * rate + 1)[:-1]
                + _f32(0.5) * bin_size).astype(_f32)
        bounds = _linspace_f32(update_min, update_max, self.bins + 1)
        buckets = np.searchsorted(bounds, mids, side="right") - 1
        buckets = np.clip(buckets, 0, self.bins - 1)
        out = np.zeros(self.bins, _f32)
        np.add.at(out, buckets, hist)  # (float32, in order, as bincount's weights)
        return out

    def forward(self, x_orig):
        if x_orig.numel() == 0:
            return x_orig
        x = _host(x_orig).astype(_f32).reshape(-1)
        if np.isinf(x).any():
            warnings.warn("torch.inf detected in input tensor, ignoring input", stacklevel=2)
            x = x[~np.isinf(x)]
            if x.size == 0:
                return x_orig
        x_min, x_max = x.min(), x.max()
        cur_min, cur_max = _f32(_host(self.min_val)), _f32(_host(self.max_val))
        if cur_min == np.inf or cur_max == -np.inf:
            self._set(_histc(x, self.bins, x_min, x_max), x_min, x_max)
            return x_orig
        new_min, new_max = min(cur_min, x_min), max(cur_max, x_max)
        update = _histc(x, self.bins, new_min, new_max)
        hist = _host(self.histogram).astype(_f32)
        if new_min == cur_min and new_max == cur_max:
            combined = hist + update
        elif cur_min == cur_max:
            combined = _histc(np.array([cur_min], _f32), self.bins, new_min, new_max) \
                * np.sum(hist, dtype=_f32) + update
        else:
            combined = update + self._upscale_histogram(hist, cur_min, cur_max, new_min,
                                                        new_max)
        self._set(combined.astype(_f32), new_min, new_max)
        return x_orig

    def calculate_qparams(self):
        mn, mx = _host(self.min_val), _host(self.max_val)
        dev = self.min_val.device
        if mn == np.inf and mx == -np.inf:
            warnings.warn("must run observer before calling calculate_qparams. Returning "
                          "default scale and zero point ", stacklevel=2)
            return tg.tensor([1.0], device=dev), tg.tensor([0], device=dev)
        if self.bins != self.histogram.numel():
            raise AssertionError("The number of bins in histogram should be equal to the "
                                 "number of bins supplied while making this observer")
        new_min, new_max = self._non_linear_param_search()
        return self._calculate_qparams(_buffer(np.asarray(new_min), dev),
                                       _buffer(np.asarray(new_max), dev))

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}"
