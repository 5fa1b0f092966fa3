"""pyproj: PROJ (libproj in pyproj.libs) opens proj.db, an SQLite database in the package's
proj_dir, by path. Zero-config: the build finds that libproj names proj.db and gives pyproj
real files (the files policy)."""

import json


def main():
    from pyproj import CRS, Geod, Transformer

    to_mercator = Transformer.from_crs("EPSG:4326", "EPSG:3857", always_xy=True)
    x, y = to_mercator.transform(2.3522, 48.8566)
    lambert = CRS.from_epsg(2154)
    distance = Geod(ellps="WGS84").inv(2.3522, 48.8566, -0.1276, 51.5072)[2]
    print(json.dumps({
        "mercator": [round(x, 1), round(y, 1)],
        "lambert": lambert.name,
        "paris_london_km": round(distance / 1000, 1),
    }))
