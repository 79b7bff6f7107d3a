/**
 * The Python side of `toPython`: the classes Python sees, run once in a
 * private namespace where native/abd_python.c put `_schema`, `_array` and
 * `_stream` (C functions that make new capsules from a source handle).
 *
 * Each class offers only the protocol methods its data supports: arrays on
 * the CPU both array methods, arrays on another device only the device
 * method, streams both stream methods, every object `__arrow_c_schema__`.
 * `requested_schema` is accepted and ignored (the spec allows returning the
 * data as if None was passed; the consumer checks what it got). The device
 * methods refuse keyword arguments other than None (the spec's kwargs rule).
 */
export const bootstrapCode = `
def _no_kwargs(kwargs):
    unsupported = sorted(name for name, value in kwargs.items() if value is not None)
    if unsupported:
        raise NotImplementedError(f"bun_arrow_device: unsupported keyword argument(s): {unsupported}")

class _JsData:
    """Arrow data owned by JS (bun-arrow-device), offered through the Arrow PyCapsule protocol."""
    __slots__ = ("_handle", "__weakref__")
    def __init__(self, handle):
        self._handle = handle
    def __arrow_c_schema__(self):
        return _schema(self._handle)
    def __repr__(self):
        return f"<bun_arrow_device.{type(self).__name__}>"

class Schema(_JsData):
    __slots__ = ()

class Array(_JsData):
    __slots__ = ()
    def __arrow_c_array__(self, requested_schema=None):
        return _array(self._handle, 0)
    def __arrow_c_device_array__(self, requested_schema=None, **kwargs):
        _no_kwargs(kwargs)
        return _array(self._handle, 1)

class DeviceArray(_JsData):
    __slots__ = ()
    def __arrow_c_device_array__(self, requested_schema=None, **kwargs):
        _no_kwargs(kwargs)
        return _array(self._handle, 1)

class Stream(_JsData):
    __slots__ = ()
    def __arrow_c_stream__(self, requested_schema=None):
        return _stream(self._handle, 0)
    def __arrow_c_device_stream__(self, requested_schema=None, **kwargs):
        _no_kwargs(kwargs)
        return _stream(self._handle, 1)

for _class in (_JsData, Schema, Array, DeviceArray, Stream):
    _class.__module__ = "bun_arrow_device"
`;
