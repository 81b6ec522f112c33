"""numpy references of XLA's scatter and gather (operation_semantics), one window at a time."""

from __future__ import annotations

import numpy as np


def _index_vectors(indices: np.ndarray, index_vector_dim: int) -> np.ndarray:
    if index_vector_dim == indices.ndim:
        indices = indices[..., None]
    return np.moveaxis(indices, index_vector_dim, -1).astype(np.int64)


def scatter_ref(operand, indices, updates, index_vector_dim, update_window_dims, inserted_window_dims,
                scatter_dims_to_operand_dims, combine=None):
    """XLA scatter; windows that do not fit are skipped; ``combine(current, update)`` or replace."""
    out = np.array(operand, copy=True)
    idx = _index_vectors(np.asarray(indices), index_vector_dim)
    scatter_dims = [d for d in range(updates.ndim) if d not in update_window_dims]
    upd = np.transpose(updates, scatter_dims + list(update_window_dims))
    sizes = iter(updates.shape[d] for d in update_window_dims)
    window = [1 if d in inserted_window_dims else next(sizes) for d in range(out.ndim)]
    for b in np.ndindex(idx.shape[:-1]):
        start = [0] * out.ndim
        for k, d in enumerate(scatter_dims_to_operand_dims):
            start[d] = int(idx[b][k])
        if any(s < 0 or s + w > n for s, w, n in zip(start, window, out.shape)):
            continue
        where = tuple(slice(s, s + w) for s, w in zip(start, window))
        win = upd[b].reshape(window)
        out[where] = win if combine is None else combine(out[where], win)
    return out


def gather_ref(operand, indices, index_vector_dim, offset_dims, slice_sizes, collapsed_slice_dims,
               start_index_map):
    """XLA gather; start indices are clamped so that every slice fits."""
    operand = np.asarray(operand)
    idx = _index_vectors(np.asarray(indices), index_vector_dim)
    batch = idx.shape[:-1]
    kept = [slice_sizes[d] for d in range(operand.ndim) if d not in collapsed_slice_dims]
    slices = []
    for b in np.ndindex(batch):
        start = [0] * operand.ndim
        for k, d in enumerate(start_index_map):
            start[d] = int(np.clip(idx[b][k], 0, operand.shape[d] - slice_sizes[d]))
        where = tuple(slice(s, s + w) for s, w in zip(start, slice_sizes))
        slices.append(operand[where].reshape(kept))
    res = np.array(slices, dtype=operand.dtype).reshape(list(batch) + kept)
    nb = len(batch)
    return np.moveaxis(res, list(range(nb, nb + len(kept))), list(offset_dims))
