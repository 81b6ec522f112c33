"""poplin's codelets: block matrix products and the reduction of partial sums over K.

``poplin::MatMulBlock<InT,OutT>`` computes one worker's piece of a tile's block product;
``poplin::ReducePartials<PartT,OutT>``, ``poplin::ReducePartialsSameType<T>`` (partials of the
output type, summed in place) and ``poplin::ScaledReducePartials<PartT,OutT>`` add the partial
products of the tiles that shared a K-split (the last into ``C += k * sum``).
``poplin::experimental::Householder``, ``UpdateColumns`` and ``UpdateRows`` are the steps of
the QR factorization (``qr.py``). ``poplin::CholeskyBlock``, ``LUBlock``, ``ForwardSubstitution``
and ``TriangularMask`` are the on-tile parts of the Cholesky, LU and triangular-solve
factorizations (``linalg.py``).
"""
