"""oxefs._decode.decode_frames (decode: gpu's transform) on its own: the
fixtures of frames/testdata decoded as TensorFlow decodes them, the batch
independent of what else is in it, and its arguments checked. The
cross-check against the daemon's frame stage, with augmentation, is the Go
test augment/gpudecode_test.go (TestGPUDecodeFidelity)."""

import glob
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="MISSING python torch: decode_frames gives torch tensors")
pytest.importorskip("torchvision", reason="MISSING python torchvision: decode_frames decodes with it where libturbojpeg is absent")

from oxefs import _decode  # noqa: E402

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "frames", "testdata")


def _fixtures():
    out = []
    for path in sorted(glob.glob(os.path.join(FIXTURES, "*.jpg"))):
        with open(path, "rb") as f:
            b = f.read()
        want = np.load(path[:-4] + ".npy")  # tf.io.decode_image(b, channels=3)
        out.append((os.path.basename(path), b, want))
    return out


def _row(**kw):
    """A recorded augment row that changes nothing, with kw's columns set."""
    row = dict(zip(_decode.COLUMNS, [1, 1, 0.5, 0.5, 0, 0, 0, 1, 1, 1, 0, 1, -1, -1, -1, -1, -1, 0]))
    row.update(kw)
    return [row[c] for c in _decode.COLUMNS]


@pytest.fixture(scope="module")
def turbo():
    if not _decode.turbojpeg_available():
        pytest.skip("MISSING libturbojpeg: TensorFlow's JPEG decode is libjpeg-turbo's fast IDCT")


def test_fixtures_decode_as_tensorflow(turbo):
    fx = _fixtures()
    assert len(fx) >= 8
    for name, b, want in fx:
        h, w = want.shape[:2]
        got = _decode.decode_frames([b], None, h, w)
        assert got.dtype == torch.uint8 and tuple(got.shape) == (1, h, w, 3), name
        np.testing.assert_array_equal(got[0].numpy(), want, err_msg=name)


def test_batch_independent_of_its_members(turbo):
    """Frames of several sizes in one call equal each decoded alone, in
    every mode and with augmentation."""
    fx = _fixtures()
    jpegs = [b for _, b, _ in fx]
    rng = np.random.default_rng(41)
    rows = np.array([_row(crop_w=0.8, crop_h=0.7, crop_x=rng.random(), crop_y=rng.random(),
                          rotate=rng.uniform(-20, 20), translate_x=0.05,
                          brightness=1.2, contrast=0.8, hue=0.1, sharpness=1.5,
                          order_brightness=0, order_contrast=2, order_hue=1, order_sharpness=3)
                     for _ in jpegs], np.float32)
    rows[1, 17] = 1  # dropped
    for mode in _decode.RESIZE_MODES:
        batch = _decode.decode_frames(jpegs, rows, 24, 40, resize=mode)
        assert batch[1].eq(0).all()
        assert batch.ne(0).any()
        for i, b in enumerate(jpegs):
            alone = _decode.decode_frames([b], rows[i:i + 1], 24, 40, resize=mode)
            assert torch.equal(batch[i], alone[0]), (mode, fx[i][0])
        first = _decode.decode_frames(jpegs, rows, 24, 40, resize=mode, channels_first=True)
        assert torch.equal(first, batch.permute(0, 3, 1, 2))


def test_arguments_checked():
    b = _fixtures()[0][1]
    with pytest.raises(ValueError, match="resize"):
        _decode.decode_frames([b], None, 8, 8, resize="stretch")
    with pytest.raises(ValueError, match="decoder"):
        _decode.decode_frames([b], None, 8, 8, decoder="pil")
    with pytest.raises(ValueError, match="18"):
        _decode.decode_frames([b], np.zeros((1, 17), np.float32), 8, 8)
    with pytest.raises(ValueError, match="size"):
        _decode.decode_frames([b], None, 0, 8)
    assert tuple(_decode.decode_frames([], None, 8, 8).shape) == (0, 8, 8, 3)


def test_truncated_jpeg_is_an_error(turbo):
    """A JPEG libjpeg-turbo only warns about (data that ends early) is not
    handed out as pixels, as the daemon never does."""
    good = _fixtures()[0][1]
    with pytest.raises(ValueError, match="frame 1: libjpeg-turbo"):
        _decode.decode_frames([good, good[: len(good) // 2]], None, 8, 8)
