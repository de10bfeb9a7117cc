"""Draws the figures that bench-images and the e2e tests return: the chart
helpers' default line chart, a 3000x1500 scatter, a 1280x1280 imshow of
noise and a photo-like gradient.  Usage: figures.py DIR [NAME...]."""
import os
import sys


def default_chart(path):
    import numpy as np
    import pandas as pd
    import vivarium_charts as vc
    rng = np.random.default_rng(1)
    idx = pd.date_range("2020-01-01", periods=1826, freq="D")
    df = pd.DataFrame({"GBP": 0.85 + np.cumsum(rng.normal(0, 0.002, len(idx))),
                       "USD": 1.10 + np.cumsum(rng.normal(0, 0.003, len(idx)))},
                      index=idx)
    vc.line_chart(df, title="Exchange rates", filename=path)


def _figure(w, h, dpi=100):
    from matplotlib.figure import Figure
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    fig = Figure(figsize=(w / dpi, h / dpi), dpi=dpi)
    FigureCanvasAgg(fig)
    return fig


def big_scatter(path):
    import numpy as np
    rng = np.random.default_rng(2)
    fig = _figure(3000, 1500)
    ax = fig.add_subplot(1, 1, 1)
    x = rng.normal(size=20000)
    ax.scatter(x, x * 0.5 + rng.normal(size=x.size), s=4, alpha=0.5)
    ax.set_title("20,000 points")
    fig.savefig(path)


def noise(path, seed=3):
    import numpy as np
    rng = np.random.default_rng(seed)
    fig = _figure(1280, 1280)
    ax = fig.add_axes([0, 0, 1, 1])
    ax.imshow(rng.random((1280, 1280, 3)), interpolation="nearest")
    ax.set_axis_off()
    fig.savefig(path)


def gradient(path):
    """Smooth colour everywhere, some texture: what a photograph is to a PNG."""
    import numpy as np
    from PIL import Image
    y, x = np.mgrid[0:1024, 0:1280].astype(float)
    r = 128 + 100 * np.sin(x / 150.0) * np.cos(y / 200.0)
    g = 255 * y / 1023.0
    b = 255 * (1 - x / 1279.0)
    rng = np.random.default_rng(4)
    img = np.stack([r, g, b], axis=-1) + rng.normal(0, 3, (1024, 1280, 3))
    Image.fromarray(np.clip(img, 0, 255).astype("uint8"), "RGB").save(path)


FIGURES = {
    "chart.png": default_chart,
    "scatter3000.png": big_scatter,
    "noise1.png": lambda p: noise(p, 11),
    "noise2.png": lambda p: noise(p, 12),
    "noise3.png": lambda p: noise(p, 13),
    "noise4.png": lambda p: noise(p, 14),
    "gradient.png": gradient,
}


def main(argv):
    out = argv[1]
    names = argv[2:] or list(FIGURES)
    os.makedirs(out, exist_ok=True)
    for n in names:
        FIGURES[n](os.path.join(out, n))
        print(os.path.join(out, n))


if __name__ == "__main__":
    main(sys.argv)
