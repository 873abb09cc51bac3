"""The Explore tab: the vocabulary browser, merge trees and the inspector."""
