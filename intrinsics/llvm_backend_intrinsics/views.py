"""Array views and 0-d boxes, emitted where they are called: basic indexing, dimension shuffles, and a scalar
put in or read out of a 0-d array.

Stock numba lowers each such node (``x[1:]``, ``x[i]``, a squeeze, ``np.array(s)``, ``x[()]``) through an ``@njit``
function of its own: numba types the function's body, lowers it into a module of its own, optimizes and compiles it,
then links it into the graph's module, where LLVM optimizes it again. In a PyMC model's log-density these
few-instruction nodes are most of the graph's nodes (with raveled inputs, a basic indexing of the one input vector per
scalar parameter). Here each is an intrinsic: its typing is a few lines of Python, its code a few instructions in the
graph's module, built with numba's own pieces (``basic_indexing``, ``make_view``, ``_empty_nd_impl``), so the values,
the layouts typed and the errors raised are stock's.

Layering: typing (`index_types_of`, `_shuffled_layout`) -> the ``@intrinsic`` glue (`basic_index`,
`dimshuffle_view`, `box_scalar`, `unbox_scalar`) -> the emitters ``_emit_*``. Values are named after the call's
arguments and output (`llvm_backend_intrinsics.naming.call_names`: a graph's variables, else ``in0``, ``out0``).

What each computes, as the Python stock's functions are (``entries`` and ``new_order`` are static):

    basic_index(((False, True, False),), box=False)(x, stop)  # x[:stop], a view
    basic_index((0,), box=False)(x, i)  # x[i] of a vector: the float, IndexError if out of bounds
    basic_index((0,), box=True)(x, i)  # np.asarray(x[i]): a new 0-d array
    dimshuffle_view((), (0,), frozenset({0}))(x)  # x of shape (1,) squeezed: a 0-d view, ValueError if not 1
    box_scalar(s)  # np.array(s)
    unbox_scalar(x)  # x[()]
"""

import operator
from functools import cache

from numba.core import cgutils, errors, types
from numba.core.imputils import impl_ret_borrowed, impl_ret_new_ref
from numba.cpython.slicing import slice_constructor_impl
from numba.extending import intrinsic
from numba.np.arrayobj import _empty_nd_impl, basic_indexing, load_item, make_view

from llvm_backend_intrinsics.naming import call_names, named, unpack_named

__all__ = [
    "SQUEEZE_ERROR",
    "basic_index",
    "box_scalar",
    "dimshuffle_view",
    "emit_array",
    "emit_box",
    "emit_copy_into",
    "emit_indices",
    "emit_intp",
    "index_types_of",
    "integer_type",
    "unbox_scalar",
]

SQUEEZE_ERROR = "DimShuffle: Attempting to squeeze axes with size not equal to one"
"""What stock's DimShuffle raises (a ValueError) when an axis it drops is not of length 1."""

_SLICE_TYPES = {False: types.slice2_type, True: types.slice3_type}


# ---------------------------------------------------------------- typing


def integer_type(ty, what: str):
    """The integer type of an integer argument (an index, a size): an integer, or a 0-d integer array (read as its
    item); a TypingError naming it ``what`` otherwise."""
    item = ty.dtype if isinstance(ty, types.Array) and ty.ndim == 0 else ty
    if not isinstance(item, types.Integer):
        raise errors.TypingError(f"{what} must be an integer or a 0-d integer array, got {ty}")
    return item


def index_types_of(entries: tuple, arguments) -> list:
    """The numba type of each index of ``entries``: an integer's own type, or the slice type of a slice."""
    index_types = []
    for k, entry in enumerate(entries):
        if isinstance(entry, int):
            index_types.append(integer_type(arguments[entry], f"basic_index: index {k}"))
            continue
        for part in entry:
            if part is not None:
                integer_type(arguments[part], f"basic_index: a bound of slice {k}")
        index_types.append(_SLICE_TYPES[entry[2] is not None])
    return index_types


def _shuffled_layout(layout: str, new_order: tuple, unit_axes: frozenset) -> str:
    """The layout of a dimension shuffle's view of an array of ``layout``: axes of length 1 have no stride
    that matters, so only the order of the others counts; kept in order it is the input's, reversed C and F
    swap, any other order is neither."""
    if layout not in ("C", "F"):
        return "A"
    kept = [axis for axis in new_order if axis != -1 and axis not in unit_axes]
    if kept == sorted(kept):
        return layout
    if kept == sorted(kept, reverse=True):
        return "F" if layout == "C" else "C"
    return "A"


# ---------------------------------------------------------------- emitters


def _emit_integer(context, builder, ty, value):
    """An index argument's integer value (a 0-d array's item, named ``<value's name>.item``)."""
    if isinstance(ty, types.Array):
        array = context.make_array(ty)(context, builder, value)
        named(array._getpointer(), f"{value.name}.struct")
        return named(load_item(context, builder, ty, named(array.data, f"{value.name}.data")), f"{value.name}.item")
    return value


def emit_intp(context, builder, ty, value):
    """An integer argument's value (`integer_type`'s) as an ``intp``, as numba's ``slice`` takes its bounds and
    an array its sizes."""
    item_type = ty.dtype if isinstance(ty, types.Array) else ty
    integer = _emit_integer(context, builder, ty, value)
    return named(context.cast(builder, integer, item_type, types.intp), f"{integer.name}.intp")


def emit_indices(context, builder, entries, argument_types, values, index_types) -> list:
    """The index values of ``entries``: integers as they are, slices built as ``slice(start, stop[, step])``
    builds them (an absent bound is None)."""
    indices = []
    for entry, index_type in zip(entries, index_types):
        if isinstance(entry, int):
            indices.append(_emit_integer(context, builder, argument_types[entry], values[entry]))
            continue
        parts = entry[: 2 + index_type.has_step]
        part_types = [types.none if part is None else types.intp for part in parts]
        part_values = [
            context.get_dummy_value()
            if part is None
            else emit_intp(context, builder, argument_types[part], values[part])
            for part in parts
        ]
        index = slice_constructor_impl(context, builder, index_type(*part_types), part_values)
        indices.append(named(index, f"slice{len(indices)}"))
    return indices


def emit_box(context, builder, dtype, value, name: str):
    """A new 0-d array of ``dtype`` holding ``value``, named ``name``."""
    array_type = types.Array(dtype, 0, "C")
    array = _empty_nd_impl(context, builder, array_type, [])
    stored = named(context.get_value_as_data(builder, dtype, value), f"{name}.value")
    builder.store(stored, named(array.data, f"{name}.data"))
    return impl_ret_new_ref(context, builder, array_type, named(array._getvalue(), name))


def emit_array(context, builder, ty, value, name: str):
    """Array ``value`` of type ``ty`` taken apart: numba's array structure, its sizes and its strides (in bytes),
    named after ``name`` (``<name>.shape0``, ``<name>.stride0``...)."""
    array = context.make_array(ty)(context, builder, value)
    named(array._getpointer(), f"{name}.struct")
    shapes = unpack_named(builder, named(array.shape, f"{name}.shape"), ty.ndim, f"{name}.shape")
    strides = unpack_named(builder, named(array.strides, f"{name}.strides"), ty.ndim, f"{name}.stride")
    return array, shapes, strides


def emit_copy_into(context, builder, data, layout: str, shapes, strides, target) -> None:
    """Copy the elements at ``data`` of sizes ``shapes`` and byte ``strides`` (numba's ``layout``) into ``target``,
    a C-contiguous array (numba's array structure) of those sizes."""
    target_strides = cgutils.unpack_tuple(builder, target.strides, len(shapes))
    with cgutils.loop_nest(builder, shapes, cgutils.intp_t) as index:
        source = cgutils.get_item_pointer2(context, builder, data, shapes, strides, layout, list(index))
        place = cgutils.get_item_pointer2(context, builder, target.data, shapes, target_strides, "C", list(index))
        builder.store(builder.load(source), place)


def _emit_view(context, builder, source_type, source, view_type, data, shapes, strides, name: str):
    """A view of ``source`` over ``data`` with ``shapes`` and ``strides``, holding a reference of its own, named
    ``name``."""
    view = make_view(context, builder, source_type, source, view_type, data, shapes, strides)
    named(view._getpointer(), f"{name}.struct")
    return impl_ret_borrowed(context, builder, view_type, named(view._getvalue(), name))


# ---------------------------------------------------------------- intrinsics


@cache
def basic_index(entries: tuple, box: bool):
    """The intrinsic ``index(x, *arguments)``: ``x[indices]`` with numba's bounds checks (stock compiles its
    Subtensor functions with ``boundscheck=True``: an integer out of bounds is an ``IndexError``, a zero step a
    ``ValueError``). ``entries`` says what each index is: an ``int``, the position among ``arguments`` of an
    integer index; a ``(start, stop, step)`` triple of positions or None, a slice. A view comes back as numba
    types ``x[indices]``; a single element as its scalar, or with ``box`` in a new 0-d array
    (``np.asarray(x[indices])``)."""

    @intrinsic
    def index(typingctx, x, *arguments):
        if not isinstance(x, types.Array):
            raise errors.TypingError(f"basic_index: x must be an array, got {x}")
        index_types = index_types_of(entries, arguments)
        typed = typingctx.resolve_function_type(operator.getitem, (x, types.BaseTuple.from_types(index_types)), {})
        if typed is None:
            raise errors.TypingError(f"basic_index: {x} cannot be indexed by {tuple(index_types)}")
        result = typed.return_type
        scalar = not isinstance(result, types.Array)
        returned = types.Array(result, 0, "C") if scalar and box else result

        def codegen(context, builder, signature, args):
            source, packed = args
            names = call_names(1 + len(arguments), 1)
            out = names.outputs[0]
            values = [builder.extract_value(packed, k, name=name) for k, name in enumerate(names.arguments[1:])]
            indices = emit_indices(context, builder, entries, arguments, values, index_types)
            array = context.make_array(x)(context, builder, source)
            named(array._getpointer(), f"{names.arguments[0]}.struct")
            data, shapes, strides = basic_indexing(context, builder, x, array, index_types, indices, boundscheck=True)
            data = named(data, f"{out}.data" if not scalar else f"{out}.ptr")
            if not scalar:
                shapes = [named(shape, f"{out}.shape{k}") for k, shape in enumerate(shapes)]
                strides = [named(stride, f"{out}.stride{k}") for k, stride in enumerate(strides)]
                return _emit_view(context, builder, x, array, result, data, shapes, strides, out)
            value = named(load_item(context, builder, x, data), f"{out}.item" if box else out)
            return emit_box(context, builder, result, value, out) if box else value

        return returned(x, types.StarArgTuple(arguments)), codegen

    return index


@cache
def dimshuffle_view(new_order: tuple, drop: tuple, unit_axes: frozenset):
    """The intrinsic ``shuffle(x)``: stock's DimShuffle of ``x`` as a view. Output axis ``k`` is input axis
    ``new_order[k]``, or a new axis of length 1 where it is -1; the input axes in ``drop`` must be of length 1
    (else a ``ValueError``, stock's message). ``unit_axes``, the input axes known to be of length 1, only
    refine the view's layout (`_shuffled_layout`)."""

    @intrinsic
    def shuffle(typingctx, x):
        if not isinstance(x, types.Array):
            raise errors.TypingError(f"dimshuffle_view: x must be an array, got {x}")
        layout = "C" if not new_order else _shuffled_layout(x.layout, new_order, unit_axes)
        view_type = types.Array(x.dtype, len(new_order), layout)

        def codegen(context, builder, signature, args):
            names = call_names(1, 1)
            name, out = names.arguments[0], names.outputs[0]
            array, shapes, strides = emit_array(context, builder, x, args[0], name)
            for axis in drop:
                not_one = builder.icmp_signed(
                    "!=", shapes[axis], shapes[axis].type(1), name=f"{name}.shape{axis}.not_one"
                )
                with cgutils.if_unlikely(builder, not_one):
                    context.call_conv.return_user_exc(builder, ValueError, (SQUEEZE_ERROR,))
            one, zero = cgutils.intp_t(1), cgutils.intp_t(0)
            view_shapes = [one if axis == -1 else shapes[axis] for axis in new_order]
            view_strides = [zero if axis == -1 else strides[axis] for axis in new_order]
            data = named(array.data, f"{name}.data")
            return _emit_view(context, builder, x, array, view_type, data, view_shapes, view_strides, out)

        return view_type(x), codegen

    return shuffle


@intrinsic
def box_scalar(typingctx, value):
    """``np.array(value)`` of a scalar: a new 0-d array of its type."""
    if not isinstance(value, types.Number | types.Boolean):
        raise errors.TypingError(f"box_scalar: value must be a scalar, got {value}")

    def codegen(context, builder, signature, args):
        return emit_box(context, builder, value, args[0], call_names(1, 1).outputs[0])

    return types.Array(value, 0, "C")(value), codegen


@intrinsic
def unbox_scalar(typingctx, x):
    """``x[()]`` of a 0-d array: its item."""
    if not (isinstance(x, types.Array) and x.ndim == 0):
        raise errors.TypingError(f"unbox_scalar: x must be a 0-d array, got {x}")

    def codegen(context, builder, signature, args):
        names = call_names(1, 1)
        name, out = names.arguments[0], names.outputs[0]
        array = context.make_array(x)(context, builder, args[0])
        named(array._getpointer(), f"{name}.struct")
        return named(load_item(context, builder, x, named(array.data, f"{name}.data")), out)

    return x.dtype(x), codegen
