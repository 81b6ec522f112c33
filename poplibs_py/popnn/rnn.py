"""popnn::rnn: one namespace, as in PopLibs, for the generic recurrent loop of Rnn.hpp
(``rnn_loop``: ``RnnParams``, ``Rnn``, sequence tensors) and the vanilla recurrent layer of
Recurrent.hpp (``recurrent``: ``rnnFwdSequence``, ``rnnBwdSequence`` and their steps)."""

from .recurrent import *  # noqa: F403
from .rnn_loop import *  # noqa: F403
