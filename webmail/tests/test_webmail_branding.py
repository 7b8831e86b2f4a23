"""The webmail brand's services: logos re-encoded by Pillow (hostile files refused), logos fetched
once from a real HTTPS server on loopback through the webhooks' SSRF-safe resolution, colours as
structured fields rendered into the brand stylesheet, and the 403 on an account that may not save."""
import io
import struct
import zlib

import pytest
from PIL import Image, PngImagePlugin

from mailcore.errors import DomainError, InvalidFields
from mailcore.partners.models import HostingPartner
from mailcore.partners.services import hosting_partner_enable
from webmail import branding
from webmail.branding import Fill, brand_stylesheet, brand_update, logo_reencode
from webmail.models import WebmailBrand
from testkit.https_files import https_files

pytestmark = pytest.mark.django_db


# images, made with Pillow (and by hand where Pillow would refuse to make them)


def png(width=64, height=32, color=(200, 30, 30, 255), **save) -> bytes:
    out = io.BytesIO()
    Image.new("RGBA", (width, height), color).save(out, "PNG", **save)
    return out.getvalue()


def jpeg_with_exif() -> bytes:
    image = Image.new("RGB", (40, 40), (10, 120, 200))
    exif = Image.Exif()
    exif[0x010F] = "SecretCam"  # Make
    exif[0x8825] = {2: (51.0, 30.0, 0.0)}  # GPS latitude
    out = io.BytesIO()
    image.save(out, "JPEG", exif=exif.tobytes())
    return out.getvalue()


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def png_bomb(side: int = 10_000) -> bytes:
    """A real decompression bomb: a small file whose pixels decode to side*side bytes of grey."""
    compressor = zlib.compressobj(9)
    row = b"\x00" + b"\x00" * side
    compressed = b"".join(compressor.compress(row) for _ in range(side)) + compressor.flush()
    header = struct.pack(">IIBBBBB", side, side, 8, 0, 0, 0, 0)  # 8-bit greyscale
    return b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header) + _chunk(b"IDAT", compressed) + _chunk(b"IEND", b"")


@pytest.fixture
def partner(alice):
    return hosting_partner_enable(account=alice.account, status=HostingPartner.Status.ACTIVE)


# the logo, uploaded


def test_a_png_is_re_encoded_without_its_metadata():
    info = PngImagePlugin.PngInfo()
    info.add_text("Author", "someone@secret.example")
    logo = logo_reencode(png(pnginfo=info, icc_profile=b"not really a profile"))
    assert logo.content_type in {"image/png", "image/webp"} and (logo.width, logo.height) == (64, 32)
    with Image.open(io.BytesIO(logo.data)) as stored:
        assert stored.size == (64, 32)
        assert "Author" not in stored.info and "icc_profile" not in stored.info
        assert stored.convert("RGBA").getpixel((5, 5)) == (200, 30, 30, 255)
    assert b"secret.example" not in logo.data


def test_a_jpeg_loses_its_exif_and_gps():
    logo = logo_reencode(jpeg_with_exif())
    with Image.open(io.BytesIO(logo.data)) as stored:
        assert not stored.getexif() and "exif" not in stored.info
    assert b"SecretCam" not in logo.data


def test_a_large_logo_is_scaled_down_to_512_pixels_a_side():
    logo = logo_reencode(png(2000, 1000))
    assert (logo.width, logo.height) == (512, 256)


def test_only_the_first_frame_of_an_animation_is_kept():
    frames = [Image.new("RGB", (20, 20), color) for color in ((255, 0, 0), (0, 255, 0))]
    out = io.BytesIO()
    frames[0].save(out, "GIF", save_all=True, append_images=frames[1:], duration=100, loop=0)
    logo = logo_reencode(out.getvalue())
    with Image.open(io.BytesIO(logo.data)) as stored:
        assert getattr(stored, "n_frames", 1) == 1
        assert stored.convert("RGB").getpixel((1, 1)) == (255, 0, 0)


@pytest.mark.parametrize("data, message", [
    (b"", "empty"),
    (b"<svg xmlns='http://www.w3.org/2000/svg' onload='alert(1)'></svg>", "not a PNG, JPEG, GIF or WebP"),
    (b"GIF89a<script>alert(1)</script>", "not a PNG, JPEG, GIF or WebP"),
    (b"%PDF-1.4 not an image at all", "not a PNG, JPEG, GIF or WebP"),
    (png()[:60], "damaged"),
])
def test_what_pillow_cannot_open_is_refused(data, message):
    with pytest.raises(InvalidFields) as refused:
        logo_reencode(data)
    assert message in refused.value.message_dict["logo"][0]


def test_a_format_outside_the_four_is_refused_even_if_pillow_reads_it():
    out = io.BytesIO()
    Image.new("RGB", (10, 10)).save(out, "BMP")
    with pytest.raises(InvalidFields) as refused:
        logo_reencode(out.getvalue())
    assert "not a PNG, JPEG, GIF or WebP" in refused.value.message_dict["logo"][0]


def test_a_file_over_2_mb_is_refused_before_it_is_opened():
    with pytest.raises(InvalidFields) as refused:
        logo_reencode(png() + b"\x00" * (2 * 1024 * 1024))
    assert refused.value.message_dict["logo"] == ["The logo is larger than 2 MB."]


def test_a_decompression_bomb_is_refused_without_decoding_it():
    bomb = png_bomb()
    assert len(bomb) < 200_000  # small on the wire, 100 million pixels inside
    with pytest.raises(InvalidFields) as refused:
        logo_reencode(bomb)
    assert "at most 8000 pixels a side" in refused.value.message_dict["logo"][0]


def test_too_many_pixels_in_a_thin_strip_are_refused():
    with pytest.raises(InvalidFields) as refused:
        logo_reencode(png(8001, 1))
    assert refused.value.message_dict["logo"] == [
        "The logo is 8001×1 pixels; at most 8000 pixels a side and 16 million in all are accepted."]


# the logo, fetched once from a URL


@pytest.fixture
def files(settings, tmp_path):
    """A public image host, as far as the fetch can tell: loopback allowed, its certificate trusted."""
    with https_files(tmp_path) as server:
        settings.WEBHOOK_ALLOW_PRIVATE = True
        settings.WEBHOOK_CA_BUNDLE = server.ca_path
        yield server


def test_a_logo_url_is_fetched_once_and_stored(partner, files):
    url = files.put("/logo.png", png(), Content_Type="image/png")
    brand = brand_update(partner=partner, logo_url=url)
    assert brand.logo_source_url == url and brand.logo_content_type in {"image/png", "image/webp"}
    assert files.hits == [("/logo.png", f"localhost:{files.port}")]
    brand_update(partner=partner, brand_name="Acme Mail")  # saving other fields never fetches again
    assert len(files.hits) == 1 and WebmailBrand.objects.get().logo == brand.logo


def test_a_redirect_is_not_followed(partner, files, settings):
    url = files.put("/moved.png", status=302, Location="https://169.254.169.254/latest/meta-data")
    with pytest.raises(InvalidFields) as refused:
        brand_update(partner=partner, logo_url=url)
    assert "redirect" in refused.value.message_dict["logo_url"][0]
    assert files.hits == [("/moved.png", f"localhost:{files.port}")]
    assert not WebmailBrand.objects.exists()


def test_a_url_answering_an_error_or_a_non_image_is_refused(partner, files):
    missing = files.url("/nothing.png")
    with pytest.raises(InvalidFields) as refused:
        brand_update(partner=partner, logo_url=missing)
    assert refused.value.message_dict["logo_url"] == ["This URL answered 404, not an image."]
    html = files.put("/page", b"<html><script>alert(1)</script></html>", Content_Type="image/png")
    with pytest.raises(InvalidFields) as refused:
        brand_update(partner=partner, logo_url=html)
    assert "not a PNG, JPEG, GIF or WebP" in refused.value.message_dict["logo_url"][0]


def test_an_answer_without_a_length_is_cut_at_2_mb(partner, files):
    url = files.put("/endless.png", b"\x89PNG" + b"\x00" * (3 * 1024 * 1024), Content_Length=None)
    with pytest.raises(InvalidFields) as refused:
        branding.logo_fetch(url)
    assert refused.value.message_dict["logo_url"] == ["The image at this URL is larger than 2 MB."]


def test_an_answer_declaring_more_than_2_mb_is_not_read(partner, files):
    url = files.put("/big.png", png(), Content_Length=str(3 * 1024 * 1024))
    with pytest.raises(InvalidFields) as refused:
        branding.logo_fetch(url)
    assert refused.value.message_dict["logo_url"] == ["The image at this URL is larger than 2 MB."]


@pytest.mark.parametrize("url, reason", [
    ("http://example.test/logo.png", "the URL must use https"),
    ("https://10.1.2.3/logo.png", "a private address"),
    ("https://192.168.1.1/logo.png", "a private address"),
    ("https://169.254.169.254/latest/meta-data", "a link-local address"),
    ("https://[::ffff:10.0.0.1]/logo.png", "a private address"),
    ("https://127.0.0.1/logo.png", "a loopback address"),
    ("https://localhost/logo.png", "localhost does not resolve to a public address"),
    ("https://user:secret@example.test/logo.png", "must not carry credentials"),
    ("file:///etc/passwd", "the URL must use https"),
])
def test_unsafe_urls_are_refused_without_a_connection(partner, settings, url, reason):
    settings.WEBHOOK_ALLOW_PRIVATE = False
    with pytest.raises(InvalidFields) as refused:
        brand_update(partner=partner, logo_url=url)
    assert reason in refused.value.message_dict["logo_url"][0]
    assert not WebmailBrand.objects.exists()


def test_a_loopback_url_is_refused_in_production_settings_even_with_a_server_there(partner, files, settings):
    settings.WEBHOOK_ALLOW_PRIVATE = False
    url = files.put("/logo.png", png())
    with pytest.raises(InvalidFields) as refused:
        brand_update(partner=partner, logo_url=url)
    message = refused.value.message_dict["logo_url"][0]
    assert "does not resolve to a public address" in message
    assert "127.0.0.1" not in message  # what the name resolved to stays unsaid
    assert files.hits == []


# colours and the stylesheet


@pytest.mark.parametrize("color, gradient_to, angle, field", [
    ("red", None, None, "color"),
    ("#12345", None, None, "color"),
    ("#1234567", None, None, "color"),
    ("#12345g", None, None, "color"),
    ("#123456; background:url(https://evil.example/x)", None, None, "color"),
    ("#123456", "blue", None, "gradient_to"),
    ("#123456", "#abcdef", 361, "angle"),
    ("#123456", "#abcdef", -1, "angle"),
    ("#123456", "#abcdef", "90deg", "angle"),
    ("#123456", "#abcdef", True, "angle"),
])
def test_colours_are_only_hex_values_and_whole_angles(color, gradient_to, angle, field):
    with pytest.raises(InvalidFields) as refused:
        Fill.parse(color, gradient_to, angle)
    assert field in refused.value.message_dict


def test_the_stylesheet_is_rendered_from_the_fields(partner):
    brand = brand_update(partner=partner, primary=Fill.parse("#1D4ED8", "#9333ea", 135),
                         secondary=Fill.parse("#fde68a"))
    css = brand_stylesheet(brand)
    assert "--primary: #1d4ed8;" in css
    assert "--brand-fill: linear-gradient(135deg, #1d4ed8, #9333ea);" in css
    assert "--on-primary: #ffffff;" in css  # white reads better on that blue
    assert "--brand-secondary-fill: #fde68a;" in css and "--on-brand-secondary: #101828;" in css  # dark on pale
    assert "url(" not in css and "@import" not in css


def test_default_colours_leave_the_stylesheet_without_overrides(partner):
    css = brand_stylesheet(brand_update(partner=partner, brand_name="Acme"))
    assert ":root" not in css and ".brand__logo" in css


@pytest.mark.parametrize("status", ["pending", "expired", "suspended", "rejected"])
def test_an_account_that_is_not_trial_or_active_cannot_save(alice, status):
    partner = hosting_partner_enable(account=alice.account, status=status)
    with pytest.raises(DomainError) as refused:
        brand_update(partner=partner, brand_name="Acme")
    assert refused.value.code == "forbidden" and "cannot be changed" in refused.value.detail
    assert not WebmailBrand.objects.exists()


def test_a_brand_name_on_two_lines_is_refused(partner):
    with pytest.raises(InvalidFields):
        brand_update(partner=partner, brand_name="Acme\nMail")
