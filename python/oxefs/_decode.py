"""JPEG frames decoded, resized and augmented on the trainer's device.

With ``decode: gpu`` the daemon serves each JPEG frame's compressed bytes
and the augmentation parameters it drew (one row of augment.Columns per
frame) instead of pixels; decode_frames turns them into what the daemon
would have written into the slot with ``decode: exact``:

1. decode: libjpeg-turbo with the fast integer IDCT and fancy upsampling
   (TensorFlow's decode, bit for bit) on the CPU when libturbojpeg.so.0
   loads; torchvision.io.decode_jpeg otherwise (libjpeg's accurate IDCT
   on the CPU, nvJPEG on CUDA: not TensorFlow's decode; the README's
   "decode: gpu fidelity" gives by how much);
2. the resize mode's placement (frames/resize.go place), the crop box in
   whole pixels cut from the part kept (frames/augment.go CropBox), and
   TensorFlow's bilinear resize with half-pixel centres in float32,
   truncated to uint8, zeros outside the box pad mode fills;
3. the affine (torchvision's F.affine grid, nearest, fill 0) over the
   resized frame (frames/affine.go);
4. the colour ops in their recorded order, as torchvision 0.14 computes
   F.adjust_brightness, _contrast, _saturation, _hue and _sharpness on
   uint8 tensors (frames/colour_ref_test.go);
5. a dropped camera's frames are zeros.

Every float32 operation of the Go code is one torch operation here, in the
same order, so a step rounds as it does there on any device; the batch is
processed at once (per-frame work is only the few scalars of each frame's
boxes and matrix). The Go cross-check is augment/gpudecode_test.go.
"""

import concurrent.futures
import ctypes
import math
import os
import threading

import numpy as np

# augment.Columns: the fused stages' columns of a recorded row.
COLUMNS = (
    "crop_w", "crop_h", "crop_x", "crop_y", "rotate", "translate_x", "translate_y",
    "brightness", "contrast", "saturation", "hue", "sharpness",
    "order_brightness", "order_contrast", "order_saturation", "order_hue", "order_sharpness", "drop",
)
RESIZE_MODES = ("squash", "crop", "pad")
DECODERS = ("auto", "turbojpeg", "torchvision")


# ---------------------------------------------------------------- decode


class _TurboJPEG:
    """libturbojpeg.so.0 through ctypes, one handle per thread, decoding as
    frames/turbojpeg does: RGB, TJFLAG_FASTDCT | TJFLAG_LIMITSCANS."""

    _TJPF_RGB = 0
    _FLAGS = 2048 | 32768  # TJFLAG_FASTDCT | TJFLAG_LIMITSCANS
    _CMYK, _YCCK = 3, 4  # TJCS_*

    def __init__(self):
        lib = ctypes.CDLL("libturbojpeg.so.0")
        lib.tjInitDecompress.restype = ctypes.c_void_p
        lib.tjInitDecompress.argtypes = []
        ip = ctypes.POINTER(ctypes.c_int)
        lib.tjDecompressHeader3.restype = ctypes.c_int
        lib.tjDecompressHeader3.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_ulong, ip, ip, ip, ip]
        lib.tjDecompress2.restype = ctypes.c_int
        lib.tjDecompress2.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_void_p,
                                      ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int]
        lib.tjGetErrorStr2.restype = ctypes.c_char_p
        lib.tjGetErrorStr2.argtypes = [ctypes.c_void_p]
        lib.tjGetErrorCode.restype = ctypes.c_int
        lib.tjGetErrorCode.argtypes = [ctypes.c_void_p]
        lib.tjDestroy.restype = ctypes.c_int
        lib.tjDestroy.argtypes = [ctypes.c_void_p]
        self._lib = lib
        self._local = threading.local()

    def _handle(self):
        h = getattr(self._local, "h", None)
        if h is None:
            h = self._lib.tjInitDecompress()
            if not h:
                raise RuntimeError("tjInitDecompress failed")
            self._local.h = h
        return h

    def _error(self, h, what):
        msg = self._lib.tjGetErrorStr2(h).decode(errors="replace")
        # A failed call may leave the handle unusable: the next call gets a
        # new one, as frames/turbojpeg does.
        self._lib.tjDestroy(h)
        self._local.h = None
        return f"libjpeg-turbo {what}: {msg}"

    def decode(self, data):
        """data (a uint8 numpy array) decoded to an [H, W, 3] uint8 array;
        None for a CMYK JPEG, which libjpeg cannot turn into RGB."""
        h = self._handle()
        w, hh, sub, cs = ctypes.c_int(), ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
        src = data.ctypes.data_as(ctypes.c_void_p)
        if self._lib.tjDecompressHeader3(h, src, data.size, ctypes.byref(w), ctypes.byref(hh),
                                         ctypes.byref(sub), ctypes.byref(cs)) != 0:
            raise ValueError(self._error(h, "header"))
        if cs.value in (self._CMYK, self._YCCK):
            return None
        out = np.empty((hh.value, w.value, 3), np.uint8)
        if self._lib.tjDecompress2(h, src, data.size, out.ctypes.data_as(ctypes.c_void_p), w.value,
                                   3 * w.value, hh.value, self._TJPF_RGB, self._FLAGS) != 0:
            # A warning too: it leaves an image that may be partly made up
            # (grey rows after data that ends early), which the daemon never
            # hands out as data either.
            raise ValueError(self._error(h, "decode"))
        return out


_turbo = None
_turbo_error = None
_turbo_lock = threading.Lock()


def turbojpeg_available():
    """Whether libturbojpeg.so.0 loads (the CPU decode is then TensorFlow's)."""
    return _load_turbo() is not None


def _load_turbo():
    global _turbo, _turbo_error
    with _turbo_lock:
        if _turbo is None and _turbo_error is None:
            try:
                _turbo = _TurboJPEG()
            except (OSError, AttributeError) as e:
                _turbo_error = e
    return _turbo


_executor = None


def _after_fork():
    """A forked child (a DataLoader worker) has none of its parent's
    threads: its pool is made anew on first use, and the lock, which
    another thread may have held at the fork, is a new one."""
    global _executor, _turbo_lock
    _executor = None
    _turbo_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def _pool():
    """The threads that decode with libjpeg-turbo: as many as the CPUs this
    process may use, made on first use."""
    global _executor
    with _turbo_lock:
        if _executor is None:
            try:
                cpus = len(os.sched_getaffinity(0))
            except AttributeError:  # not Linux
                cpus = os.cpu_count() or 1
            _executor = concurrent.futures.ThreadPoolExecutor(max_workers=max(cpus, 1), thread_name_prefix="oxefs-jpeg")
    return _executor


def _as_bytes(torch, b):
    """A frame's bytes as a 1-D uint8 numpy array, without a copy where it
    can."""
    if isinstance(b, torch.Tensor):
        return b.detach().to("cpu").contiguous().view(-1).numpy()
    if isinstance(b, np.ndarray):
        return np.ascontiguousarray(b, dtype=np.uint8).reshape(-1)
    return np.frombuffer(b, dtype=np.uint8)


def _decode_all(torch, jpegs, keep, device, decoder):
    """The frames keep of jpegs decoded, each an [h, w, 3] uint8 tensor on
    device (None where not kept)."""
    out = [None] * len(jpegs)
    todo = [i for i in range(len(jpegs)) if keep[i]]
    if not todo:
        return out
    turbo = None
    if decoder == "turbojpeg" or (decoder == "auto" and device.type == "cpu"):
        turbo = _load_turbo()
        if turbo is None and decoder == "turbojpeg":
            raise RuntimeError(f"decoder='turbojpeg': libturbojpeg.so.0 does not load: {_turbo_error}")
    from torchvision.io import ImageReadMode, decode_jpeg
    datas = [_as_bytes(torch, jpegs[i]) for i in todo]
    decoded = [None] * len(todo)
    if turbo is not None:

        def one(k):
            try:
                return turbo.decode(datas[k])
            except ValueError as e:
                raise ValueError(f"frame {todo[k]}: {e}") from None

        # libjpeg-turbo runs without the GIL: the frames decode in parallel.
        decoded = list(_pool().map(one, range(len(todo)))) if len(todo) > 1 else [one(0)]
    rest = []
    for i, data, img in zip(todo, datas, decoded):
        if img is None:
            rest.append((i, data))
            continue
        out[i] = torch.from_numpy(img).to(device, non_blocking=True)
    if not rest:
        return out
    tensors = [torch.from_numpy(np.array(d, dtype=np.uint8, copy=True)) for _, d in rest]
    if device.type == "cuda":
        try:  # batched nvJPEG (torchvision 0.19 and later)
            imgs = decode_jpeg(tensors, mode=ImageReadMode.RGB, device=device)
        except (TypeError, RuntimeError):
            imgs = [decode_jpeg(t, mode=ImageReadMode.RGB, device=device) for t in tensors]
    else:
        imgs = [decode_jpeg(t, mode=ImageReadMode.RGB) for t in tensors]
    for (i, _), img in zip(rest, imgs):
        out[i] = img.permute(1, 2, 0).to(device)
    return out


# -------------------------------------------------------------- geometry


def _place(mode, w, h, out_w, out_h):
    """frames/resize.go place: the box (x, y, w, h) of a w×h source that is
    resized into the box of the out_w×out_h frame."""
    src = (0, 0, w, h)
    dst = (0, 0, out_w, out_h)
    if mode == "crop":
        ch = min(max(w * out_h // out_w, 1), h)
        cw = min(max(h * out_w // out_h, 1), w)
        src = ((w - cw) // 2, (h - ch) // 2, cw, ch)
    elif mode == "pad":
        f32 = np.float32
        fw, fh, ftw, fth = f32(w), f32(h), f32(out_w), f32(out_h)
        ratio = max(f32(fw / ftw), f32(fh / fth))
        rh, rw = f32(fh / ratio), f32(fw / ratio)
        dh = min(max(int(math.floor(rh)), 1), out_h)
        dw = min(max(int(math.floor(rw)), 1), out_w)
        py = max(int(math.floor(f32(f32(fth - rh) / f32(2)))), 0)
        px = max(int(math.floor(f32(f32(ftw - rw) / f32(2)))), 0)
        dst = (min(px, out_w - dw), min(py, out_h - dh), dw, dh)
    return src, dst


def _round_half_away(x):
    f = math.floor(x)
    return f + 1 if x - f >= 0.5 else f


def _crop_side(frac, pos, n):
    """frames.CropBox's cropSide: (offset, size) in whole pixels."""
    if frac == 0:
        frac = 1.0
    size = min(max(int(_round_half_away(frac * n)), 1), n)
    free = n - size
    off = min(int(math.floor(pos * (free + 1))), free)
    return max(off, 0), size


def _geometry(mode, w, h, out_w, out_h, row):
    """The crop box in the source and the box of the frame it is resized
    into, for one frame (frames/augment.go writeAugmented)."""
    sb, db = _place(mode, w, h, out_w, out_h)
    if row is not None:
        # In float64, as Go computes the box (numpy 2 would keep a float32
        # scalar's products in float32).
        x, bw = _crop_side(float(row[0]), float(row[2]), sb[2])
        y, bh = _crop_side(float(row[1]), float(row[3]), sb[3])
        sb = (sb[0] + x, sb[1] + y, bw, bh)
        if mode == "pad":
            _, db = _place("pad", bw, bh, out_w, out_h)
    return sb, db


def _taps(torch, pos, n_in, n_out):
    """TensorFlow's half-pixel bilinear taps for the output coordinates pos
    ([N, K] int64, each in [0, n_out)) of sides n_in → n_out ([N] int64):
    lower and upper source coordinates and the upper one's weight, in
    float32 as frames/resize.go taps computes them."""
    scale = n_in.to(torch.float32) / n_out.to(torch.float32)
    src = (pos.to(torch.float32) + 0.5) * scale[:, None]
    src = src - 0.5
    fl = torch.floor(src)
    top = (n_in - 1)[:, None]
    lo = torch.minimum(fl.to(torch.int64).clamp(min=0), top)
    hi = torch.minimum(torch.ceil(src).to(torch.int64), top).clamp(min=0)
    return lo, hi, src - fl


def _resize(torch, imgs, boxes, height, width, device):
    """Each image's crop box resized into its frame box of an height×width
    frame, zeros around it: [N, H, W, 3] uint8."""
    n = len(imgs)
    if all(sb[2:] == db[2:] for sb, db in boxes):
        # Every box is already its frame box's size: the resize is a copy
        # (at scale 1 every tap is a whole pixel with weight 0).
        out = torch.zeros((n, height, width, 3), dtype=torch.uint8, device=device)
        for k, (im, ((sx, sy, w, h), (dx, dy, _, _))) in enumerate(zip(imgs, boxes)):
            out[k, dy:dy + h, dx:dx + w] = im[sy:sy + h, sx:sx + w]
        return out
    # Every source's rows one after the other, as wide as the widest: the
    # rows a frame needs are one index_select, its columns one gather.
    wmax = max(im.shape[1] for im in imgs)
    first = [0]
    for im in imgs:
        first.append(first[-1] + im.shape[0])
    src = torch.empty((first[-1], wmax * 3), dtype=torch.uint8, device=device)
    for k, im in enumerate(imgs):
        src[first[k]:first[k + 1], :im.shape[1] * 3].copy_(im.reshape(im.shape[0], -1))
    meta = torch.tensor([[first[k], *boxes[k][0], *boxes[k][1]] for k in range(n)], dtype=torch.int64, device=device)
    row0 = meta[:, 0]
    sx, sy, sw, sh = meta[:, 1], meta[:, 2], meta[:, 3], meta[:, 4]
    dx, dy, dw, dh = meta[:, 5], meta[:, 6], meta[:, 7], meta[:, 8]
    jx = torch.arange(width, device=device)[None, :] - dx[:, None]  # [N, W]
    jy = torch.arange(height, device=device)[None, :] - dy[:, None]  # [N, H]
    okx = (jx >= 0) & (jx < dw[:, None])
    oky = (jy >= 0) & (jy < dh[:, None])
    jx = torch.minimum(jx.clamp(min=0), (dw - 1)[:, None])
    jy = torch.minimum(jy.clamp(min=0), (dh - 1)[:, None])
    xlo, xhi, xl = _taps(torch, jx, sw, dw)
    ylo, yhi, yl = _taps(torch, jy, sh, dh)
    # Byte columns of each output value: 3·column + channel.
    rgb = torch.arange(3, device=device)
    cols_lo = (((xlo + sx[:, None]) * 3)[:, :, None] + rgb).reshape(n, 1, width * 3)
    cols_hi = (((xhi + sx[:, None]) * 3)[:, :, None] + rgb).reshape(n, 1, width * 3)
    xl3 = xl.repeat_interleave(3, dim=1)[:, None, :]
    base = (row0 + sy)[:, None]

    def across(rows):
        """Rows [n, R] of the boxes interpolated across: [n, R, 3·W].
        TensorFlow's a + (b − a)·l, written (b − a)·l + a: the same sum."""
        r = rows.shape[1]
        src_rows = src.index_select(0, (base + rows).reshape(-1)).view(n, r, wmax * 3)
        lo = torch.gather(src_rows, 2, cols_lo.expand(n, r, width * 3)).to(torch.float32)
        hi = torch.gather(src_rows, 2, cols_hi.expand(n, r, width * 3)).to(torch.float32)
        return hi.sub_(lo).mul_(xl3).add_(lo)

    shmax = max(sb[3] for sb, _ in boxes)
    if shmax < 2 * height:
        # Fewer rows in the boxes than the output's upper and lower rows:
        # each row of a box interpolated across once, then picked.
        rows = torch.minimum(torch.arange(shmax, device=device)[None, :], (sh - 1)[:, None])
        done = across(rows).view(n * shmax, width * 3)
        first_row = (torch.arange(n, device=device) * shmax)[:, None]
        top = done.index_select(0, (first_row + ylo).reshape(-1)).view(n, height, width * 3)
        bot = done.index_select(0, (first_row + yhi).reshape(-1)).view(n, height, width * 3)
    else:
        top = across(ylo)
        bot = across(yhi)
    out = bot.sub_(top).mul_(yl[:, :, None]).add_(top).to(torch.uint8).view(n, height, width, 3)
    return out.mul_((oky[:, :, None] & okx[:, None, :])[..., None])


def _affine(torch, planes, rows, device):
    """planes ([3, N, H, W], whole numbers in float32) moved by each row's rotation and
    translation: torchvision's F.affine grid, nearest, zeros outside
    (frames/affine.go, grid.at)."""
    _, n, height, width = planes.shape
    th = np.empty((n, 6), np.float32)
    for k, row in enumerate(rows):
        tx = round(float(row[5]) * width)  # half to even, as Go's RoundToEven
        ty = round(float(row[6]) * height)
        rot = -float(row[4]) * (math.pi / 180)
        c, s = math.cos(rot), math.sin(rot)
        m = [c, s, 0.0, -s, c, 0.0]
        m[2] += m[0] * -tx + m[1] * -ty
        m[5] += m[3] * -tx + m[4] * -ty
        th[k] = m
    f32 = torch.float32
    th = torch.from_numpy(th).to(device)
    hw = torch.tensor(0.5 * width, dtype=f32, device=device)
    hh = torch.tensor(0.5 * height, dtype=f32, device=device)
    rx, ry = th[:, 0:3] / hw, th[:, 3:6] / hh
    xb = torch.arange(width, dtype=f32, device=device) - width * 0.5 + 0.5
    yb = torch.arange(height, dtype=f32, device=device) - height * 0.5 + 0.5
    col_x, col_y = xb[None, :] * rx[:, 0:1], xb[None, :] * ry[:, 0:1]  # [N, W]
    row_x, row_y = yb[None, :] * rx[:, 1:2], yb[None, :] * ry[:, 1:2]  # [N, H]
    gx = (col_x[:, None, :] + row_x[:, :, None]) + rx[:, 2, None, None]
    gy = (col_y[:, None, :] + row_y[:, :, None]) + ry[:, 2, None, None]
    ix = torch.round((gx + 1) * (width / 2) - 0.5)
    iy = torch.round((gy + 1) * (height / 2) - 0.5)
    ok = (ix >= 0) & (ix < width) & (iy >= 0) & (iy < height)
    # The pixel's place in its frame, a whole number below 2^24 inside it.
    at = torch.where(ok, iy * width + ix, torch.zeros_like(ix)).to(torch.int64).view(1, n, -1)
    out = torch.gather(planes.reshape(3, n, -1), 2, at.expand(3, n, height * width))
    return out.view(3, n, height, width).mul_(ok)


# ---------------------------------------------------------------- colour


def _factor(torch, f, device):
    """Per-frame factors f as [1, n, 1, 1] float32, and 1 − f computed in
    float64 then rounded (as Python computes torchvision's 1.0 − ratio)."""
    f64 = np.asarray(f, np.float64)
    one = torch.from_numpy((1.0 - f64).astype(np.float32)).to(device).view(1, -1, 1, 1)
    return torch.from_numpy(f64.astype(np.float32)).to(device).view(1, -1, 1, 1), one


# The colour ops take and give planes [3, n, H, W] of float32 whole
# numbers in [0, 255]: the uint8 frames torchvision's ops take and give,
# truncated as its .to(torch.uint8) truncates, kept in float32 between ops.


def _blend(torch, x, f, one, other):
    """torchvision's _blend: (f·x + (1 − f)·other).clamp(0, 255), truncated."""
    v = x * f
    if other is not None:
        v.add_(one * other)
    return v.clamp_(0, 255).trunc_()


def _gray(torch, x):
    """rgb_to_grayscale of planes x: [n, H, W], truncated."""
    return ((0.2989 * x[0] + 0.587 * x[1]) + 0.114 * x[2]).trunc_()


def _brightness(torch, x, f, one):
    return _blend(torch, x, f, one, None)


def _contrast(torch, x, f, one):
    h, w = x.shape[2], x.shape[3]
    # The sum of whole numbers, exact in float64, rounded to float32 and
    # divided by the count in float32, as the Go code takes torch.mean.
    total = _gray(torch, x).sum(dim=(1, 2), dtype=torch.float64)
    mean = total.to(torch.float32) / torch.tensor(float(h * w), dtype=torch.float32, device=x.device)
    return _blend(torch, x, f, one, mean.view(1, -1, 1, 1))


def _saturation(torch, x, f, one):
    return _blend(torch, x, f, one, _gray(torch, x)[None])


def _hue(torch, x, f, one):
    """torchvision 0.14's adjust_hue: RGB/255 → HSV, shift, → RGB, ·255
    truncated."""
    img = x / 255.0
    r, g, b = img[0], img[1], img[2]
    maxc = torch.maximum(torch.maximum(r, g), b)
    minc = torch.minimum(torch.minimum(r, g), b)
    eqc = maxc == minc
    cr = maxc - minc
    ones = torch.ones_like(maxc)
    s = cr / torch.where(eqc, ones, maxc)
    div = torch.where(eqc, ones, cr)
    rc, gc, bc = (maxc - r) / div, (maxc - g) / div, (maxc - b) / div
    # torchvision adds the three masked terms; two of them are zeros, so
    # the sum is the third.
    h = torch.where(maxc == r, bc - gc, torch.where(maxc == g, (2.0 + rc) - bc, (4.0 + gc) - rc))
    h = h / 6.0 + 1.0
    h = h - torch.floor(h)  # fmod by 1 of a value in (0, 2)
    h = h + f.view(-1, 1, 1)
    h = h - torch.floor(h)  # Python's % 1.0
    h6 = h * 6.0
    i = torch.floor(h6)
    fr = h6 - i
    i = torch.where(i == 6.0, torch.zeros_like(i), i)  # i % 6: h6 < 6 but for h rounded up to 1
    v = maxc
    p = (v * (1.0 - s)).clamp_(0.0, 1.0)
    q = (v * (1.0 - s * fr)).clamp_(0.0, 1.0)
    t = (v * (1.0 - s * (1.0 - fr))).clamp_(0.0, 1.0)
    # _hsv2rgb's choice for each sector i of (v, p, q, t):
    #   red   v q p p t v,   green t v v q p p,   blue p p t v v q
    sector = [i == k for k in range(6)]
    red = torch.where(sector[0] | sector[5], v, torch.where(sector[1], q, torch.where(sector[4], t, p)))
    green = torch.where(sector[1] | sector[2], v, torch.where(sector[0], t, torch.where(sector[3], q, p)))
    blue = torch.where(sector[3] | sector[4], v, torch.where(sector[2], t, torch.where(sector[5], q, p)))
    return torch.stack((red, green, blue)).mul_(255.0).trunc_()


def _sharpness(torch, x, f, one):
    """adjust_sharpness: the inner pixels blend with the 3×3 blur (its nine
    products added row by row in float32, rounded half to even), the
    border with themselves."""
    h, w = x.shape[2], x.shape[3]
    if h <= 2 or w <= 2:
        return x
    xf = x
    side = torch.tensor(1.0, dtype=torch.float32) / torch.tensor(13.0, dtype=torch.float32)
    centre = torch.tensor(5.0, dtype=torch.float32) / torch.tensor(13.0, dtype=torch.float32)
    side, centre = side.to(x.device), centre.to(x.device)
    sx = xf * side
    up, mid, down = sx[..., :-2, :], sx[..., 1:-1, :], sx[..., 2:, :]
    acc = up[..., :-2] + up[..., 1:-1]
    acc += up[..., 2:]
    acc += mid[..., :-2]
    acc += xf[..., 1:-1, 1:-1] * centre
    acc += mid[..., 2:]
    acc += down[..., :-2]
    acc += down[..., 1:-1]
    acc += down[..., 2:]
    blur = xf.clone()
    blur[..., 1:-1, 1:-1] = torch.round(acc)
    return _blend(torch, x, f, one, blur)


_OPS = (_brightness, _contrast, _saturation, _hue, _sharpness)


def _colour(torch, planes, rows, device):
    """The colour ops of each row over planes [3, n, H, W], in each row's
    order."""
    order = np.asarray(rows[:, 12:17]).astype(np.int64)
    factor = np.asarray(rows[:, 7:12], np.float32)
    n = planes.shape[1]
    for place in range(int(order.max(initial=-1)) + 1):
        for op in range(len(_OPS)):
            sel = np.nonzero(order[:, op] == place)[0]
            if sel.size == 0:
                continue
            f, one = _factor(torch, factor[sel, op], device)
            if sel.size == n:
                planes = _OPS[op](torch, planes, f, one)
                continue
            idx = torch.from_numpy(sel).to(device)
            planes.index_copy_(1, idx, _OPS[op](torch, planes.index_select(1, idx), f, one))
    return planes


# ------------------------------------------------------------------ API


def decode_frames(jpegs, params, height, width, resize="squash", device="cpu", decoder="auto",
                  channels_first=False):
    """JPEG frames as the daemon writes them into a slot with decode: exact.

    jpegs: the frames' compressed bytes (bytes-like, or 1-D uint8 numpy
    arrays or tensors); params: float32 [N, 18] rows of augment.Columns
    (what the daemon records in .augment.npy, one per frame), or None for
    no augmentation; height, width: the slot's frame size; resize: the
    slot's mode, "squash", "crop" or "pad"; device: where the frames go
    (and are computed); decoder: "auto" (libjpeg-turbo on the CPU, nvJPEG
    through torchvision on CUDA), "turbojpeg" or "torchvision".

    Returns a torch.uint8 tensor [N, height, width, 3] on device, or
    [N, 3, height, width] with channels_first.
    """
    import torch

    if resize not in RESIZE_MODES:
        raise ValueError(f"resize {resize!r} is not valid (valid: {', '.join(RESIZE_MODES)})")
    if decoder not in DECODERS:
        raise ValueError(f"decoder {decoder!r} is not valid (valid: {', '.join(DECODERS)})")
    if height < 1 or width < 1 or height * width >= 1 << 24:
        raise ValueError(f"frame size {height}x{width} (HxW) is not positive or not below 2^24 pixels")
    device = torch.device(device)
    n = len(jpegs)
    rows = None
    if params is not None:
        if isinstance(params, torch.Tensor):
            params = params.detach().cpu().numpy()
        rows = np.asarray(params, dtype=np.float32)
        if rows.shape != (n, len(COLUMNS)):
            raise ValueError(f"params of shape {rows.shape}, want ({n}, {len(COLUMNS)}): one row of "
                             f"{len(COLUMNS)} columns (augment.Columns) per frame; registered ops' "
                             "columns are not applied here")
    shape = (n, 3, height, width) if channels_first else (n, height, width, 3)
    out = torch.zeros(shape, dtype=torch.uint8, device=device)
    if n == 0:
        return out
    keep = [True] * n if rows is None else [rows[i, 17] != 1 for i in range(n)]
    imgs = _decode_all(torch, jpegs, keep, device, decoder)
    live = [i for i in range(n) if keep[i]]
    if not live:
        return out
    boxes = [_geometry(resize, imgs[i].shape[1], imgs[i].shape[0], width, height,
                       None if rows is None else rows[i]) for i in live]
    frames = _resize(torch, [imgs[i] for i in live], boxes, height, width, device)
    planes = None
    if rows is not None and ((rows[live, 4:7] != 0).any() or (rows[live, 12:17] >= 0).any()):
        planes = frames.permute(3, 0, 1, 2).to(torch.float32, memory_format=torch.contiguous_format)
        lr = rows[live]
        moved = np.nonzero((lr[:, 4] != 0) | (lr[:, 5] != 0) | (lr[:, 6] != 0))[0]
        if moved.size == len(live):
            planes = _affine(torch, planes, lr, device)
        elif moved.size:
            idx = torch.from_numpy(moved).to(device)
            planes.index_copy_(1, idx, _affine(torch, planes.index_select(1, idx), lr[moved], device))
        if (lr[:, 12:17] >= 0).any():
            planes = _colour(torch, planes, lr, device)
    if planes is not None:
        planes = planes.to(torch.uint8)
        frames = planes.permute(1, 0, 2, 3) if channels_first else planes.permute(1, 2, 3, 0)
    elif channels_first:
        frames = frames.permute(0, 3, 1, 2)
    if len(live) == n:
        return frames.contiguous()
    out.index_copy_(0, torch.tensor(live, device=device), frames)
    return out
