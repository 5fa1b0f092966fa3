"""Pillow: an image drawn with shapes, saved as PNG, JPEG and WebP (libjpeg, libwebp and zlib
from the wheel's bundled libraries), read back and compared."""

import io
import json


def main():
    from PIL import Image, ImageDraw, ImageFilter, features

    image = Image.new("RGB", (64, 48), "white")
    draw = ImageDraw.Draw(image)
    draw.rectangle((8, 8, 40, 32), fill=(200, 30, 30))
    draw.ellipse((30, 20, 60, 44), fill=(30, 30, 200))
    out = {}
    for format in ("PNG", "JPEG", "WEBP"):
        buffer = io.BytesIO()
        image.save(buffer, format=format, **({"quality": 90} if format != "PNG" else {}))
        buffer.seek(0)
        with Image.open(buffer) as back:
            out[format] = [back.format, list(back.size), back.convert("RGB").getpixel((20, 20))]
    blurred = image.filter(ImageFilter.GaussianBlur(2)).getpixel((8, 8))
    out["png_exact"] = out["PNG"][2] == [200, 30, 30] or tuple(out["PNG"][2]) == (200, 30, 30)
    out["blurred"] = list(blurred)
    out["features"] = {name: features.check(name) for name in ("jpg", "webp", "zlib")}
    # FreeType (ImageFont): Pillow's bundled libfreetype and libharfbuzz need each other.
    from PIL import ImageFont
    font = ImageFont.load_default(size=24)
    text = Image.new("L", (120, 40), 0)
    ImageDraw.Draw(text).text((4, 4), "ingot", font=font, fill=255)
    out["text"] = [type(font).__name__, list(ImageDraw.Draw(text).textbbox((4, 4), "ingot", font=font)),
                   sum(1 for value in text.getdata() if value > 128)]
    out["features"]["freetype2"] = features.check("freetype2")
    print(json.dumps(out))
